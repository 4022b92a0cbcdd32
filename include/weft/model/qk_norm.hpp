#pragma once
// ---- QK-norm: RMSNorm of every query and key head before attention (OLMo 2, Qwen 3, Gemma 3) ----
// qk_norm<H, KVH, D> sits between the packed q|k|v projection and causal_attention: each of
// the H query heads and KVH key heads of a row (D wide) is RMS-normalised with a gain of D
// shared by the heads ("q_weight", "k_weight", as Qwen 3's q_norm/k_norm), values pass
// through. Rotary embeddings (inside causal_attention) come after it, as in those models.
// qk_norm_attention<C, H, KVH, Pos, Bias> is attention<> with it in place.
//
// Tensor parallelism: tensor_parallel_qk_norm<H/TP, KVH/TP, D, TP, SP> is its form on one of TP
// ranks (parallel/tensor_parallel.hpp maps it so): the rank's heads, the gains whole. The gains
// are shared by heads on different ranks, so a rank's gradient of them is its heads' share only:
// the layer sums this micro-batch's share over the tensor-parallel group in its backward (with
// sequence parallelism tensor_parallel_step sums every replicated gradient over the group after
// backward, this one included, so the layer leaves it to the step).
#include "weft/core/diagnostics.hpp"  // diag::divisible, diag::at_least
#include "weft/core/shape.hpp"        // shape, axis
#include "weft/model/attention.hpp"   // detail::attention_shape
#include "weft/model/causal_attention.hpp"  // causal_attention
#include "weft/model/layer.hpp"       // leaf_layer, frame
#include "weft/model/linear.hpp"      // linear, packed
#include "weft/model/named.hpp"       // named
#include "weft/model/sequential.hpp"  // sequential
#include "weft/ops/accumulate.hpp"    // accumulate
#include "weft/ops/copy.hpp"          // copy
#include "weft/ops/fill.hpp"          // zero, fill
#include "weft/ops/rmsnorm.hpp"       // rmsnorm_forward/backward
#include "weft/model/norm_stats.hpp"  // norm_stat_slots, norm_stats

#include <cstddef>
#include <stdexcept>
#include <string>
#include <type_traits>

namespace weft {

/// RMSNorm (epsilon Eps, 1e-5 unless given) over each query and key head of packed (q | k | v)
/// rows; v unchanged. `UnitOffset`: Gemma 3's form x̂·(1 + w), the gains initialised to 0; the
/// gains 1 + w are formed in the workspace (2·D elements) and the ordinary rmsnorm ops run with
/// them (rmsnorm<C, Eps, true> alike).
template <std::size_t H, std::size_t KVH, std::size_t D, double Eps = ops::rmsnorm_eps, bool UnitOffset = false>
struct qk_norm : leaf_layer<param_list<param<"q_weight", shape<axis<"head_dim", D>>, role::replicated,
                                             std::conditional_t<UnitOffset, init::zeros, init::ones>>,
                                       param<"k_weight", shape<axis<"head_dim", D>>, role::replicated,
                                             std::conditional_t<UnitOffset, init::zeros, init::ones>>>> {
  static constexpr bool sizes_positive = diag::at_least<H, 1> && diag::at_least<KVH, 1> && diag::at_least<D, 1>;
  static_assert(sizes_positive, "weft::qk_norm: heads, kv_heads or the head size is 0. Give each at least 1.");
  static constexpr bool eps_valid = Eps > 0 && Eps < 1;
  static_assert(eps_valid, "weft::qk_norm: the epsilon is not in (0, 1). Give the model's epsilon (1e-6 for Qwen 3).");
  static constexpr double eps = eps_valid ? Eps : ops::rmsnorm_eps;
  static constexpr bool unit_offset = UnitOffset;
  static constexpr std::size_t heads = H, kv_heads = KVH, head_size = D;
  static constexpr std::size_t qkv_width = (H + 2 * KVH) * D;
  static constexpr std::size_t in_width = qkv_width;
  static constexpr std::size_t out_width = qkv_width;
  template <std::size_t B, std::size_t S>
  static constexpr std::size_t kept_count = norm_stat_slots<B * S * (H + KVH)>;  // 1/rms per (row, q or k head)
  template <std::size_t B, std::size_t S>
  static constexpr std::size_t scratch_count = UnitOffset ? 2 * D : 0;  // the gains 1 + w

  template <class F>
  static void forward(const F& f, const typename F::value_type* in, typename F::value_type* out) {
    const auto* g = gain_block(f);
    for (std::size_t r = 0; r < F::rows; ++r) {  // one token row: (q heads, k heads, v heads)
      const auto* x = in + r * qkv_width;
      auto* y = out + r * qkv_width;
      auto* rstd = norm_stats(f.kept) + r * (H + KVH);  // (heads + kv_heads), ops::stat_t
      ops::rmsnorm_forward<H, D, eps>(f.ctx, view<H, D>(f, y), view<H>(f, rstd), view<H, D>(f, x),
                                 view<D>(f, g));  // q: (H, D)
      ops::rmsnorm_forward<KVH, D, eps>(f.ctx, view<KVH, D>(f, y + H * D), view<KVH>(f, rstd + H),
                                   view<KVH, D>(f, x + H * D), view<D>(f, g + D));  // k: (KVH, D)
      ops::copy(f.ctx, view<KVH, D>(f, y + (H + KVH) * D), view<KVH, D>(f, x + (H + KVH) * D));  // v: (KVH, D)
    }
  }
  template <class F>
  static void backward(const F& f, const typename F::value_type* in, const typename F::value_type* dout,
                       typename F::value_type* din) {
    const auto* g = gain_block(f);
    for (std::size_t r = 0; r < F::rows; ++r) {
      const auto* x = in + r * qkv_width;
      const auto* dy = dout + r * qkv_width;
      auto* dx = din + r * qkv_width;
      const auto* rstd = norm_stats(f.kept) + r * (H + KVH);
      ops::rmsnorm_backward<H, D>(f.ctx, view<H, D>(f, dx), view<D>(f, f.grads), view<H, D>(f, dy), view<H, D>(f, x),
                                  view<D>(f, g), view<H>(f, rstd));
      ops::rmsnorm_backward<KVH, D>(f.ctx, view<KVH, D>(f, dx + H * D), view<D>(f, f.grads + D),
                                    view<KVH, D>(f, dy + H * D), view<KVH, D>(f, x + H * D), view<D>(f, g + D),
                                    view<KVH>(f, rstd + H));
      ops::accumulate(f.ctx, view<KVH, D>(f, dx + (H + KVH) * D), view<KVH, D>(f, dy + (H + KVH) * D));
    }
  }

 private:
  // q_weight | k_weight as the ops multiply by them: the weights, or (UnitOffset) 1 + each in the workspace.
  template <class F>
  static const typename F::value_type* gain_block(const F& f) {
    using T = typename F::value_type;
    if constexpr (UnitOffset) {
      ops::fill(f.ctx, f.scratch, 2 * D, static_cast<T>(1.0));
      ops::accumulate(f.ctx, f.scratch, f.params, 2 * D);
      return f.scratch;
    } else {
      return f.params;
    }
  }
};

/// qk_norm on one of `TP` tensor-parallel ranks (`SP`: with sequence parallelism): H and KVH are
/// the rank's query and key heads, between the column-parallel c_attn and causal_attention; the
/// gains (q_weight, k_weight) are whole on every rank and their gradients summed over the group
/// (see the top of the file).
template <std::size_t H, std::size_t KVH, std::size_t D, std::size_t TP, bool SP, double Eps = ops::rmsnorm_eps,
          bool UnitOffset = false>
struct tensor_parallel_qk_norm : qk_norm<H, KVH, D, Eps, UnitOffset> {
  using base = qk_norm<H, KVH, D, Eps, UnitOffset>;
  static constexpr std::size_t tp = TP;
  /// Without SP: the gains' gradients accumulated before this micro-batch, (2, D); then base's.
  template <std::size_t B, std::size_t S>
  static constexpr std::size_t scratch_count = (SP ? 0 : 2 * D) + base::template scratch_count<B, S>;

  template <class F>
  static void backward(const F& f, const typename F::value_type* in, const typename F::value_type* dout,
                       typename F::value_type* din) {
    if constexpr (SP) {
      base::backward(f, in, dout, din);  // this rank's share; tensor_parallel_step sums it over the group
    } else {
      if (f.tp == nullptr || f.tp->size() != static_cast<int>(TP))
        throw std::logic_error("weft::tensor_parallel_qk_norm: the frame has no tensor-parallel group of size " +
                               std::to_string(TP) + ". Run the sharded model through tensor_parallel_step (it sets frame::tp).");
      // Sum only this micro-batch's share: earlier micro-batches' gradients are already whole.
      const auto saved = view<2, D>(f, f.scratch);
      const auto gains = view<2, D>(f, f.grads);  // q_weight | k_weight gradients so far
      ops::copy(f.ctx, saved, gains);
      ops::zero(f.ctx, gains);
      F bf = f;  // base's workspace after the saved gradients
      bf.scratch = f.scratch + 2 * D;
      base::backward(bf, in, dout, din);     // this rank's heads' share
      f.tp->all_reduce_sum(f.grads, 2 * D);  // every head's
      ops::accumulate(f.ctx, gains, saved);
    }
  }
};

/// attention<> with QK-norm: `c_attn` -> `qk_norm` -> causal attention (rope after the norm)
/// -> `c_proj`. Names: c_attn, qk_norm.q_weight, qk_norm.k_weight, c_proj. `Window` and `HeadDim`
/// as attention<>'s (Qwen 3: QK-norm with a head size of its own); `OutBias` is c_proj's bias
/// (Bias by default); `NormEps` the head norms' epsilon.
template <std::size_t C, std::size_t H, std::size_t KVH = H, class PosEnc = rope, bool Bias = false,
          std::size_t Window = 0, std::size_t HeadDim = 0, bool OutBias = Bias, double NormEps = ops::rmsnorm_eps>
using qk_norm_attention = sequential<
    named<"c_attn", linear<C, detail::attention_shape<C, H, KVH, HeadDim>::q_width +
                                  2 * detail::attention_shape<C, H, KVH, HeadDim>::kv_width,
                           role::column, Bias, init::normal<20>, export_layout::as_is,
                           packed<detail::attention_shape<C, H, KVH, HeadDim>::q_width,
                                  detail::attention_shape<C, H, KVH, HeadDim>::kv_width,
                                  detail::attention_shape<C, H, KVH, HeadDim>::kv_width>>>,
    named<"qk_norm", qk_norm<detail::attention_shape<C, H, KVH, HeadDim>::h, detail::attention_shape<C, H, KVH, HeadDim>::kvh,
                             detail::attention_shape<C, H, KVH, HeadDim>::head_size, NormEps>>,
    causal_attention<detail::attention_shape<C, H, KVH, HeadDim>::h, detail::attention_shape<C, H, KVH, HeadDim>::kvh,
                     detail::attention_shape<C, H, KVH, HeadDim>::head_size, PosEnc, Window>,
    named<"c_proj", linear<detail::attention_shape<C, H, KVH, HeadDim>::q_width, C, role::row, OutBias,
                           init::normal_residual<20>>>>;

}  // namespace weft

#pragma once
// ---- a top-k routed mixture-of-experts MLP (Mixtral, Switch Transformer, Qwen-MoE) ----
// moe_mlp<C, Experts, TopK, Ffn, Options...>: width C -> width C, in place of an MLP.
//   router     logits(N, E) = x · gate.weightᵀ (no bias); probs = softmax; the TopK experts of
//              largest probability, gates renormalised over the k (Mixtral), ties to the lower
//              expert index (ops/topk_router.hpp)
//   dispatch   dropless: every token goes to each of its k experts, the N·k routed rows grouped
//              by expert in (token, k) order (ops/moe_dispatch.hpp)
//   experts    per expert a bias-free MLP of hidden width Ffn, GELU (default) or SwiGLU
//              (option swiglu_experts), run as grouped matrix products (ops/grouped_matmul.hpp)
//   combine    out[n] = sum_k gate[n, k] · expert_k(x[n])  (+ shared_expert(x[n]) if given)
//   aux loss   alpha · E · sum_e f_e · P_e (Switch), added to the training loss through the
//              backward (model/aux_loss.hpp says how its value is reported and weighted):
//              f_e the fraction of the N·k routed slots that go to expert e, P_e the mean router
//              probability of e over the N tokens. By default each layer adds its own (a model's
//              loss is the sum over its layers); with pooled_aux_loss the model adds one, of f and P
//              pooled over all its pooled layers' L·N tokens (transformers' form; docs/moe.md)
// Parameters (stacked per expert, as Hugging Face's fused-expert checkpoints keep them):
//   gate.weight                 (expert, in)                      router
//   experts.up_proj             (expert, ffn, in)                 GELU experts, or
//   experts.gate_up_proj        (expert, 2·ffn, in)               SwiGLU experts, [gate | up]
//   experts.down_proj           (expert, in, ffn)
//   shared_expert.<child names> the shared expert's own parameters (option shared_expert<L>)
// Kept (rows N = batch·seq, R = N·k routed rows): probs (N, E), gates (N, k), expert
// pre-activations (R, ffn or 2·ffn), activations (R, ffn), expert outputs (R, C), and the
// routing as int32 (choices (N, k), slots (N, k), tokens (R), offsets (E + 1)), one element of
// the kept block each (the host element types are at least 4 bytes), then the shared expert's.
// Tensor parallelism runs the layer whole on every rank of the group (replicated, as a norm;
// under sequence parallelism on the gathered sequence: parallel/tensor_parallel.hpp); expert
// parallelism is model/moe_expert_parallel.hpp and model/ep_moe_mlp.hpp.
#include "weft/core/diagnostics.hpp"  // diag::at_least
#include "weft/core/shape.hpp"        // shape, axis
#include "weft/model/aux_loss.hpp"    // aux_losses
#include "weft/model/layer.hpp"       // leaf_layer, frame, npos_param, param_info
#include "weft/model/param.hpp"       // param, param_list, init
#include "weft/ops/accumulate.hpp"    // accumulate
#include "weft/ops/fill.hpp"          // zero
#include "weft/ops/gelu.hpp"          // gelu_forward/backward
#include "weft/ops/grouped_matmul.hpp"  // grouped_matmul_forward/backward
#include "weft/ops/matmul.hpp"        // matmul_forward/backward
#include "weft/ops/moe_dispatch.hpp"  // moe_dispatch_plan, moe_gather, moe_combine
#include "weft/ops/swiglu.hpp"        // swiglu_forward/backward
#include "weft/ops/topk_router.hpp"   // topk_router_forward/backward, load_balance_loss

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

namespace weft {

// ---- options ----

/// The experts are SwiGLU MLPs (LLaMA/Mixtral): silu(x·W_gate) ⊙ (x·W_up) · W_down.
struct swiglu_experts {
  using weft_moe_option_tag = void;
};
/// The experts are GELU MLPs (GPT-2 style, tanh GELU, no biases). The default.
struct gelu_experts {
  using weft_moe_option_tag = void;
};
/// One shared expert `L` (any width-preserving layer, e.g. swiglu_mlp<C, F>) applied to every
/// token and added to the routed output (Qwen-MoE, DeepSeek-MoE; several shared experts are one
/// wider MLP). Its parameters are called `shared_expert.<its names>`.
template <class L>
struct shared_expert {
  using weft_moe_option_tag = void;
  using layer_type = L;
};
/// The load-balancing loss in transformers' form (Mixtral's and Qwen3-MoE's load_balancing_loss_func,
/// output_router_logits=True): ONE loss per micro-batch, alpha · E · sum_e F_e · P_e with F_e the
/// fraction of all pooled layers' routed slots that go to expert e and P_e the mean probability
/// of e over all their tokens, in place of one such loss per layer summed. With transformers'
/// router_aux_loss_coef c, alpha = c · k (transformers counts slots per token, not per slot).
/// Needs each micro-batch's forwards of all its layers before their backwards in one process
/// (model/aux_loss.hpp, pooled_routing): not under pipeline parallelism or expert parallelism.
struct pooled_aux_loss {
  using weft_moe_option_tag = void;
};
/// The load-balancing loss weight alpha = Num / Den (default 1 / 100, as Switch and Mixtral).
/// aux_loss_weight<0> turns the auxiliary loss off.
template <std::size_t Num, std::size_t Den = 1000>
struct aux_loss_weight {
  using weft_moe_option_tag = void;
  static constexpr double value = static_cast<double>(Num) / static_cast<double>(Den);
};

namespace detail {
template <class T>
struct is_shared_expert : std::false_type {};
template <class L>
struct is_shared_expert<shared_expert<L>> : std::true_type {};
template <class T>
struct is_aux_weight : std::false_type {};
template <std::size_t N, std::size_t D>
struct is_aux_weight<aux_loss_weight<N, D>> : std::true_type {};

// The first option satisfying Pred, or Default.
template <template <class> class Pred, class Default, class... Os>
struct find_option {
  using type = Default;
};
template <template <class> class Pred, class Default, class O, class... Os>
struct find_option<Pred, Default, O, Os...> {
  using type = std::conditional_t<Pred<O>::value, O, typename find_option<Pred, Default, Os...>::type>;
};
template <class O>
struct is_swiglu_option : std::is_same<O, swiglu_experts> {};

// No shared expert: a stand-in with nothing in it.
struct no_shared_expert {
  static constexpr std::size_t param_count = 0;
  template <std::size_t B, std::size_t S>
  static constexpr std::size_t kept_count = 0;
  template <std::size_t B, std::size_t S>
  static constexpr std::size_t scratch_count = 0;
};

template <class O>
inline constexpr bool is_moe_option = requires { typename O::weft_moe_option_tag; };

template <std::size_t C, std::size_t E, std::size_t H1, std::size_t F>
using moe_params_gelu = param_list<param<"gate.weight", shape<axis<"out", E>, axis<"in", C>>, role::replicated, init::normal<20>>,
                                   param<"experts.up_proj", shape<axis<"expert", E>, axis<"out", H1>, axis<"in", C>>,
                                         role::replicated, init::normal<20>>,
                                   param<"experts.down_proj", shape<axis<"expert", E>, axis<"out", C>, axis<"in", F>>,
                                         role::replicated, init::normal_residual<20>>>;
template <std::size_t C, std::size_t E, std::size_t H1, std::size_t F>
using moe_params_swiglu = param_list<param<"gate.weight", shape<axis<"out", E>, axis<"in", C>>, role::replicated, init::normal<20>>,
                                     param<"experts.gate_up_proj", shape<axis<"expert", E>, axis<"out", H1>, axis<"in", C>>,
                                           role::replicated, init::normal<20>>,
                                     param<"experts.down_proj", shape<axis<"expert", E>, axis<"out", C>, axis<"in", F>>,
                                           role::replicated, init::normal_residual<20>>>;
}  // namespace detail

/// A top-k routed mixture of `Experts` MLPs of hidden width `Ffn` (see the top of this file).
template <std::size_t C, std::size_t Experts, std::size_t TopK, std::size_t Ffn, class... Options>
struct moe_mlp {
  static constexpr bool options_known = (detail::is_moe_option<Options> && ... && true);
  static_assert(options_known, "weft::moe_mlp: an option is not a moe_mlp option. Use swiglu_experts, gelu_experts, shared_expert<L>, aux_loss_weight<N, D> or pooled_aux_loss.");
  static constexpr bool sizes_positive = diag::at_least<C, 1> && diag::at_least<Experts, 1> && diag::at_least<TopK, 1> && diag::at_least<Ffn, 1>;
  static_assert(sizes_positive, "weft::moe_mlp: a size is 0. Give the width, experts, top-k and ffn as at least 1.");
  static constexpr bool topk_fits = diag::at_most<TopK, Experts>;
  static_assert(topk_fits, "weft::moe_mlp: top-k is larger than the number of experts. Route each token to at most Experts experts.");

  static constexpr std::size_t width = C, experts = Experts, top_k = TopK, ffn = Ffn;
  static constexpr bool swiglu = (detail::is_swiglu_option<Options>::value || ... || false);
  static constexpr std::size_t expert_in = swiglu ? 2 * Ffn : Ffn;  ///< rows of a first expert matrix
  using aux_weight = typename detail::find_option<detail::is_aux_weight, aux_loss_weight<10>, Options...>::type;
  static constexpr double aux_alpha = aux_weight::value;
  /// The load-balancing loss pooled over the model's layers (pooled_aux_loss), else per layer.
  static constexpr bool pooled_aux = (std::is_same_v<Options, pooled_aux_loss> || ... || false);
  using shared_option = typename detail::find_option<detail::is_shared_expert, void, Options...>::type;
  static constexpr bool has_shared = !std::is_void_v<shared_option>;
  using shared_type = typename std::conditional_t<has_shared, shared_option, shared_expert<detail::no_shared_expert>>::layer_type;

  using params = std::conditional_t<swiglu, detail::moe_params_swiglu<C, Experts, expert_in, Ffn>,
                                    detail::moe_params_gelu<C, Experts, expert_in, Ffn>>;
  static constexpr std::string_view structure_name = "moe_mlp";
  /// Tensor parallelism runs it whole on every rank (tp_shard, parallel/tensor_parallel.hpp).
  static constexpr bool tp_replicated = true;
  static constexpr std::size_t in_width = C, out_width = C;
  static constexpr std::size_t own_param_count = params::size;
  static constexpr std::size_t param_count = own_param_count + shared_type::param_count;
  static constexpr std::size_t gate_offset = params::template offset_of<"gate.weight">;
  static constexpr std::size_t w1_offset = params::offsets[1];
  static constexpr std::size_t w2_offset = params::template offset_of<"experts.down_proj">;

  // ---- kept block (elements) ----
  template <std::size_t B, std::size_t S>
  struct kept_layout {
    static constexpr std::size_t N = B * S, R = N * TopK;
    static constexpr std::size_t probs = 0;                         // (N, E)
    static constexpr std::size_t gates = probs + N * Experts;       // (N, k)
    static constexpr std::size_t pre = gates + N * TopK;            // (R, expert_in)
    static constexpr std::size_t act = pre + R * expert_in;         // (R, ffn)
    static constexpr std::size_t out = act + R * Ffn;               // (R, C)
    static constexpr std::size_t ints = out + R * C;                // int32: choices, slots, tokens, offsets
    static constexpr std::size_t int_count = 3 * R + Experts + 1;
    static constexpr std::size_t shared = ints + int_count;         // the shared expert's kept block
    static constexpr std::size_t total = shared + shared_type::template kept_count<B, S>;
  };
  template <std::size_t B, std::size_t S>
  static constexpr std::size_t kept_count = kept_layout<B, S>::total;

  // ---- workspace (elements): ours, then the shared expert's ----
  template <std::size_t B, std::size_t S>
  static constexpr std::size_t own_scratch = [] {
    constexpr std::size_t N = B * S, R = N * TopK;
    constexpr std::size_t fwd = R * C + (has_shared ? N * C : 0);              // grouped x, shared out
    constexpr std::size_t bwd = 3 * R * C + R * Ffn + R * expert_in + N * TopK + N * Experts;
    return std::max(fwd, bwd);
  }();
  template <std::size_t B, std::size_t S>
  static constexpr std::size_t scratch_count = own_scratch<B, S> + shared_type::template scratch_count<B, S>;

  static constexpr std::size_t find_param(std::string_view path) {
    const std::size_t o = params::find(path);
    if (o != params::npos) return o;
    if constexpr (has_shared) {
      constexpr std::string_view prefix = "shared_expert.";
      if (path.substr(0, prefix.size()) == prefix) {
        const std::size_t s = shared_type::find_param(path.substr(prefix.size()));
        return s == npos_param ? npos_param : own_param_count + s;
      }
    }
    return npos_param;
  }
  template <class F>
  static void visit_params(const std::string& prefix, std::size_t base, const init_context& ic, F&& f) {
    leaf_layer<params>::visit_params(prefix, base, ic, f);
    if constexpr (has_shared) shared_type::visit_params(prefix + "shared_expert.", base + own_param_count, ic, f);
  }

  /// The load-balancing loss of the last forward in this frame (alpha included).
  template <class Fr>
  static double aux_loss(const Fr& f) {
    using L = kept_layout<Fr::batch, Fr::seq>;
    return ops::load_balance_loss<Fr::rows, Experts, TopK>(f.ctx, ops::none,  // no gradient
                                                             view<Fr::rows, Experts>(f, f.kept + L::probs),
                                                             view<Fr::rows, TopK>(f, choices(f)), aux_alpha, 0.0);
  }

  template <class Fr>
  static void forward(const Fr& f, const typename Fr::value_type* in, typename Fr::value_type* out) {
    using T = typename Fr::value_type;
    static_assert(sizeof(T) >= sizeof(std::int32_t), "weft::moe_mlp: the routing is kept as int32 in the element type's slots, which must be at least 4 bytes. Use float or double.");
    using L = kept_layout<Fr::batch, Fr::seq>;
    constexpr std::size_t N = L::N, R = L::R;
    T* probs = f.kept + L::probs;  // (N, E)
    T* gates = f.kept + L::gates;  // (N, k)
    std::int32_t* ch = choices(f);           // (N, k)
    std::int32_t* slot = ch + R;             // (N, k)
    std::int32_t* token = slot + R;          // (R)
    std::int32_t* offsets = token + R;       // (E + 1)
    // router: logits into probs, then softmax and top-k in place
    const auto x = view<N, C>(f, in);
    const auto offs = view<Experts + 1>(f, offsets);
    ops::matmul_forward<N, C, Experts>(f.ctx, view<N, Experts>(f, probs), x,
                                       linear_weight<C, Experts>(f, f.params + gate_offset), ops::none);
    ops::topk_router_forward<N, Experts, TopK>(f.ctx, view<N, Experts>(f, probs), view<N, TopK>(f, gates),
                                               view<N, TopK>(f, ch), view<N, Experts>(f, probs));
    static_assert(!pooled_aux || host_execution_context<typename Fr::context_type>,
                  "weft::moe_mlp: pooled_aux_loss reads the routing on the host. Run it on the host, or drop pooled_aux_loss.");
    if constexpr (pooled_aux && aux_alpha > 0)
      if (f.grads) {  // a forward that a backward follows: this layer's routing statistics
        std::vector<double> counts(Experts, 0.0), prob_sums(Experts, 0.0);
        for (std::size_t i = 0; i < N * TopK; ++i) counts[static_cast<std::size_t>(ch[i])] += 1.0;
        for (std::size_t n = 0; n < N; ++n)
          for (std::size_t e = 0; e < Experts; ++e) prob_sums[e] += static_cast<double>(probs[n * Experts + e]);
        aux_losses().pooled.set(f.param_offset(), std::move(counts), std::move(prob_sums), double(N), double(N * TopK));
      }
    ops::moe_dispatch_plan<N, Experts, TopK>(f.ctx, offs, view<R>(f, slot), view<R>(f, token), view<N, TopK>(f, ch));
    // experts over the grouped rows
    T* xe = f.scratch;  // (R, C)
    ops::moe_gather<N, TopK, C>(f.ctx, view<R, C>(f, xe), x, view<R>(f, token));
    T* pre = f.kept + L::pre;  // (R, expert_in)
    T* act = f.kept + L::act;  // (R, ffn)
    T* ye = f.kept + L::out;   // (R, C)
    ops::grouped_matmul_forward<R, C, expert_in, Experts>(f.ctx, view<R, expert_in>(f, pre), view<R, C>(f, xe),
                                                          view<Experts, expert_in, C>(f, f.params + w1_offset), offs);
    if constexpr (swiglu) ops::swiglu_forward<R, Ffn>(f.ctx, view<R, Ffn>(f, act), view<R, expert_in>(f, pre));
    else ops::gelu_forward<R * Ffn>(f.ctx, view<R, Ffn>(f, act), view<R, Ffn>(f, pre));
    ops::grouped_matmul_forward<R, Ffn, C, Experts>(f.ctx, view<R, C>(f, ye), view<R, Ffn>(f, act),
                                                    view<Experts, C, Ffn>(f, f.params + w2_offset), offs);
    ops::moe_combine_forward<N, TopK, C>(f.ctx, view<N, C>(f, out), view<R, C>(f, ye), view<N, TopK>(f, gates),
                                         view<N, TopK>(f, slot));  // (N, C)
    if constexpr (has_shared) {
      T* sh = f.scratch + R * C;  // (N, C)
      shared_type::forward(shared_frame(f), in, sh);
      ops::accumulate(f.ctx, view<N, C>(f, out), view<N, C>(f, sh));
    }
  }

  template <class Fr>
  static void backward(const Fr& f, const typename Fr::value_type* in, const typename Fr::value_type* dout,
                       typename Fr::value_type* din) {
    using T = typename Fr::value_type;
    using L = kept_layout<Fr::batch, Fr::seq>;
    constexpr std::size_t N = L::N, R = L::R;
    if constexpr (has_shared) {  // its parameters come last: its gradients are final first
      const Fr sf = shared_frame(f);
      shared_type::backward(sf, in, dout, din);
      sf.report_grads_final();
    }
    const T* probs = f.kept + L::probs;
    const T* gates = f.kept + L::gates;
    const std::int32_t* ch = choices(f);
    const std::int32_t* slot = ch + R;
    const std::int32_t* token = slot + R;
    const std::int32_t* offsets = token + R;
    // workspace: (R, C) x3, (R, ffn), (R, expert_in), (N, k), (N, E)
    T* xe = f.scratch;
    T* dye = xe + R * C;
    T* dxe = dye + R * C;
    T* dact = dxe + R * C;
    T* dpre = dact + R * Ffn;
    T* dgates = dpre + R * expert_in;
    T* dlogits = dgates + N * TopK;
    const auto x = view<N, C>(f, in);
    const auto offs = view<Experts + 1>(f, offsets);
    ops::zero(f.ctx, view<2 * R * C + R * Ffn + R * expert_in + N * TopK + N * Experts>(f, dye));  // all but xe
    ops::moe_gather<N, TopK, C>(f.ctx, view<R, C>(f, xe), x, view<R>(f, token));  // re-gathered, not kept
    ops::moe_combine_backward<N, TopK, C>(f.ctx, view<R, C>(f, dye), view<N, TopK>(f, dgates), view<N, C>(f, dout),
                                          view<R, C>(f, f.kept + L::out), view<N, TopK>(f, gates), view<N, TopK>(f, slot));
    ops::grouped_matmul_backward<R, Ffn, C, Experts>(f.ctx, view<R, Ffn>(f, dact), view<Experts, C, Ffn>(f, f.grads + w2_offset),
                                                      view<R, C>(f, dye), view<R, Ffn>(f, f.kept + L::act),
                                                      view<Experts, C, Ffn>(f, f.params + w2_offset), offs);
    if constexpr (swiglu)
      ops::swiglu_backward<R, Ffn>(f.ctx, view<R, expert_in>(f, dpre), view<R, expert_in>(f, f.kept + L::pre),
                                   view<R, Ffn>(f, dact));
    else
      ops::gelu_backward<R * Ffn>(f.ctx, view<R, Ffn>(f, dpre), view<R, Ffn>(f, f.kept + L::pre), view<R, Ffn>(f, dact));
    ops::grouped_matmul_backward<R, C, expert_in, Experts>(f.ctx, view<R, C>(f, dxe),
                                                            view<Experts, expert_in, C>(f, f.grads + w1_offset),
                                                            view<R, expert_in>(f, dpre), view<R, C>(f, xe),
                                                            view<Experts, expert_in, C>(f, f.params + w1_offset), offs);
    ops::moe_gather_backward<N, TopK, C>(f.ctx, view<N, C>(f, din), view<R, C>(f, dxe), view<N, TopK>(f, slot));
    // router: through the gates, plus the load-balancing loss (its weight in the step's loss
    // is aux_losses().gradient_scale); its value is reported to the meter
    ops::topk_router_backward<N, Experts, TopK>(f.ctx, view<N, Experts>(f, dlogits), view<N, TopK>(f, dgates),
                                                view<N, Experts>(f, probs), view<N, TopK>(f, gates), view<N, TopK>(f, ch));
    if constexpr (aux_alpha > 0 && pooled_aux) {
      pooled_aux_backward<N>(dlogits, probs, f.param_offset());
    } else if constexpr (aux_alpha > 0) {
      auto& meter = aux_losses();
      const double aux = ops::load_balance_loss<N, Experts, TopK>(
          f.ctx, view<N, Experts>(f, meter.gradient_scale != 0 ? dlogits : nullptr), view<N, Experts>(f, probs),
          view<N, TopK>(f, ch), aux_alpha, meter.gradient_scale);
      meter.record(aux);
    }
    ops::matmul_backward<N, C, Experts>(f.ctx, view<N, C>(f, din), linear_weight<C, Experts>(f, f.grads + gate_offset),
                                        ops::none, view<N, Experts>(f, dlogits), x,
                                        linear_weight<C, Experts>(f, f.params + gate_offset));
  }

 private:
  // The pooled form's backward of this layer (pooled_aux_loss): with F_e and P_e pooled over the
  // micro-batch's layers (rows N_all, slots S_all), aux = alpha E sum_e F_e P_e, and
  // d aux / d p[n, e] = alpha E F_e / N_all for this layer's probabilities (F held constant, as
  // transformers' histogram of the top-k choices); the first backward of the micro-batch reports
  // the value.
  template <std::size_t N, class T>
  static void pooled_aux_backward(T* dlogits, const T* probs, std::size_t key) {
    auto& meter = aux_losses();
    pooled_routing& pr = meter.pooled;
    if (!pr.layers.contains(key))
      throw std::logic_error("weft::moe_mlp: pooled_aux_loss: a backward without its forward's routing statistics (the "
                             "pooled load-balancing loss needs every layer's forward of a micro-batch first, in one process)");
    const pooled_routing::totals t = pr.pooled();
    const double ae = aux_alpha * static_cast<double>(Experts);
    if (pr.none_done()) {
      double aux = 0;
      for (std::size_t e = 0; e < Experts; ++e) aux += t.counts[e] / t.slots * (t.prob_sums[e] / t.rows);
      meter.record(ae * aux);
    }
    if (meter.gradient_scale != 0) {
      double c[Experts];
      for (std::size_t e = 0; e < Experts; ++e) c[e] = meter.gradient_scale * ae * t.counts[e] / t.slots / t.rows;
      for (std::size_t n = 0; n < N; ++n) {
        const T* p = probs + n * Experts;
        double pc = 0;
        for (std::size_t e = 0; e < Experts; ++e) pc += static_cast<double>(p[e]) * c[e];
        for (std::size_t e = 0; e < Experts; ++e)
          dlogits[n * Experts + e] += static_cast<T>(static_cast<double>(p[e]) * (c[e] - pc));
      }
    }
    pr.finish(key);
  }

  template <class Fr>
  static std::int32_t* choices(const Fr& f) {
    // the int32 routing lives in the kept block's element slots (see the top of the file)
    return reinterpret_cast<std::int32_t*>(f.kept + kept_layout<Fr::batch, Fr::seq>::ints);
  }
  template <class Fr>
  static Fr shared_frame(const Fr& f) {
    return f.child(own_param_count, kept_layout<Fr::batch, Fr::seq>::shared, own_scratch<Fr::batch, Fr::seq>);
  }
};

}  // namespace weft

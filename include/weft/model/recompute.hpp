#pragma once
// ---- activation recomputation: layers that keep less and recompute in backward ----
// recomputed<repeat<N, Block, First>>   full recomputation (Chen et al. 2016; Korthikanti et al.
//     2022, "full"): forward keeps only each copy's input and writes the block's own kept
//     activations into ONE per-block buffer, overwritten by every copy. Backward of copy k re-runs
//     Block::forward for copy k into that buffer first (its output goes to workspace and is
//     dropped), then runs Block::backward. The last copy's activations are still in the buffer
//     after forward, so it is not re-run.
//     kept:      Block::kept_count + (N-1)·B·S·width      (repeat: N·Block::kept_count + the same)
//     workspace: repeat's + B·S·width (the dropped output) when N > 1
// selective_attention<H, KVH, D, PosEnc>   selective recomputation (Korthikanti et al. 2022,
//     Section 4.2): causal_attention without its kept softmax probabilities (batch, heads, seq,
//     seq); backward recomputes them from q, k, v into workspace first.
// recompute_model<Model, Body>   a whole model (gpt, llama: a type derived from sequential<...>)
//     whose layers are `Body`, the model's own sequential with the layers above swapped in; every
//     other fact (names, config, find_param, visit_params) is the model's.
// The same operations run in the same order on the same inputs as without recomputation, so
// the losses and gradients are bit-identical. Parameter names, counts and offsets are unchanged.
// parallel/recompute.hpp maps a model to its recomputed form (with_recompute_t); plan<> uses it.
#include "weft/model/causal_attention.hpp"  // causal_attention
#include "weft/model/layer.hpp"             // layer, frame
#include "weft/model/repeat.hpp"            // repeat
#include "weft/ops/attention.hpp"           // attention_forward/backward
#include "weft/ops/fill.hpp"                // zero
#include "weft/ops/rope.hpp"                // rope_forward/backward

#include <algorithm>
#include <cstddef>
#include <string>
#include <string_view>

namespace weft {

/// Full recomputation of a repeat<N, Block, First> (see the top of this file).
template <class Repeat>
struct recomputed;

template <std::size_t N, layer Block, std::size_t First>
struct recomputed<repeat<N, Block, First>> {
  using repeat_type = repeat<N, Block, First>;
  using block_type = Block;
  static constexpr std::size_t count = N;
  static constexpr std::size_t first = First;
  static constexpr std::size_t in_width = repeat_type::in_width;
  static constexpr std::size_t out_width = repeat_type::out_width;
  static constexpr std::size_t param_count = repeat_type::param_count;
  /// One block's kept activations (shared by the copies), then the inputs of copies 1..N-1.
  template <std::size_t B, std::size_t S>
  static constexpr std::size_t kept_count = Block::template kept_count<B, S> + (N - 1) * B * S * in_width;
  template <std::size_t B, std::size_t S>
  static constexpr std::size_t pingpong = repeat_type::template pingpong<B, S>;
  /// The dropped output of a re-run copy, (batch, seq, width); none with one copy (never re-run).
  template <std::size_t B, std::size_t S>
  static constexpr std::size_t rerun_out = (N > 1) ? B * S * out_width : 0;
  template <std::size_t B, std::size_t S>
  static constexpr std::size_t scratch_count = pingpong<B, S> + rerun_out<B, S> + Block::template scratch_count<B, S>;

  static constexpr std::size_t find_param(std::string_view path) { return repeat_type::find_param(path); }
  template <class F>
  static void visit_params(const std::string& prefix, std::size_t base, const init_context& ic, F&& f) {
    repeat_type::visit_params(prefix, base, ic, f);
  }

  template <class F>
  static void forward(const F& f, const typename F::value_type* in, typename F::value_type* out) {
    const detail::stack_window<F> window(f, param_count);  // ZeRO layer by layer (repeat.hpp)
    for (std::size_t i = 0; i < N; ++i) {
      const auto* x = i == 0 ? in : x_buffer(f, i);
      auto* y = i + 1 == N ? out : x_buffer(f, i + 1);
      F cf = block_frame(f, i);
      window.params(cf, Block::param_count, i + 1 < N ? cf.poff + Block::param_count : npos_param);
      Block::forward(cf, x, y);  // overwrites the shared kept buffer
    }
  }
  template <class F>
  static void backward(const F& f, const typename F::value_type* in, const typename F::value_type* dout,
                       typename F::value_type* din) {
    using T = typename F::value_type;
    constexpr std::size_t B = F::batch, S = F::seq, rows = B * S;
    const detail::stack_window<F> window(f, param_count);
    for (std::size_t k = N; k-- > 0;) {
      const T* g_out = (k + 1 == N) ? dout : f.scratch + ((k + 1) % 2) * rows * in_width;
      const T* x = k == 0 ? in : x_buffer(f, k);
      F cf = block_frame(f, k);
      window.params(cf, Block::param_count, k > 0 ? cf.poff - Block::param_count : npos_param);
      if (k + 1 < N) Block::forward(cf, x, f.scratch + pingpong<B, S>);  // re-run copy k: its kept activations
      T* g_in = din;
      if (k > 0) {
        g_in = f.scratch + (k % 2) * rows * in_width;
        ops::zero(f.ctx, view<rows, in_width>(f, g_in));
      }
      const bool grads_windowed = window.grads(cf, Block::param_count);
      Block::backward(cf, x, g_out, g_in);
      if (grads_windowed) window.done(cf, Block::param_count);
      cf.report_grads_final();
    }
  }

 private:
  template <class F>
  static F block_frame(const F& f, std::size_t i) {  // copy i: its parameters, the shared kept buffer
    F cf = f.child(i * Block::param_count, 0, pingpong<F::batch, F::seq> + rerun_out<F::batch, F::seq>);
    cf.layer = First + i;  // as repeat<> numbers its copies
    return cf;
  }
  template <class F>
  static typename F::value_type* x_buffer(const F& f, std::size_t i) {  // input of copy i >= 1
    constexpr std::size_t B = F::batch, S = F::seq;
    return f.kept + Block::template kept_count<B, S> + (i - 1) * B * S * in_width;
  }
};

/// causal_attention that keeps no softmax probabilities: backward recomputes them (selective
/// recomputation). With rope it still keeps the rotated q, k, v, from which they are recomputed.
template <std::size_t H, std::size_t KVH, std::size_t D, class PosEnc = no_rope, std::size_t Window = 0>
struct selective_attention : causal_attention<H, KVH, D, PosEnc, Window> {
  using base = causal_attention<H, KVH, D, PosEnc, Window>;
  using base::in_width;
  using base::out_width;
  using base::qkv_width;
  template <std::size_t B, std::size_t S>
  static constexpr std::size_t probs_count = base::template probs_count<B, S>;
  template <std::size_t B, std::size_t S>
  static constexpr std::size_t rotated_count = PosEnc::enabled ? B * S * qkv_width : 0;
  template <std::size_t B, std::size_t S>
  static constexpr std::size_t kept_count = rotated_count<B, S>;  // (batch, seq, qkv_width) with rope
  // probs | dprobs | the recomputed (dropped) output, later the rotated gradient
  template <std::size_t B, std::size_t S>
  static constexpr std::size_t scratch_count = 2 * probs_count<B, S> + std::max(B * S * out_width, rotated_count<B, S>);

  template <class F>
  static void forward(const F& f, const typename F::value_type* in, typename F::value_type* out) {
    constexpr std::size_t B = F::batch, S = F::seq;
    auto* probs = f.scratch;  // (batch, heads, seq, seq), dropped
    if constexpr (PosEnc::enabled) {
      auto* rotated = f.kept;  // (batch, seq, qkv_width)
      ops::rope_forward<B, S, H, KVH, D, PosEnc::base, PosEnc::template dims<D>, typename PosEnc::scaling>(f.ctx, view<B * S, qkv_width>(f, rotated), view<B * S, qkv_width>(f, in));
      ops::attention_forward<B, S, H, KVH, D, Window>(f.ctx, view<B * S, out_width>(f, out), view<B, H, S, S>(f, probs),
                                              view<B * S, qkv_width>(f, rotated));
    } else {
      ops::attention_forward<B, S, H, KVH, D, Window>(f.ctx, view<B * S, out_width>(f, out), view<B, H, S, S>(f, probs),
                                              view<B * S, qkv_width>(f, in));
    }
  }
  template <class F>
  static void backward(const F& f, const typename F::value_type* in, const typename F::value_type* dout,
                       typename F::value_type* din) {
    constexpr std::size_t B = F::batch, S = F::seq;
    using T = typename F::value_type;
    T* probs = f.scratch;                            // (batch, heads, seq, seq)
    T* dprobs = f.scratch + probs_count<B, S>;       // (batch, heads, seq, seq)
    T* tail = f.scratch + 2 * probs_count<B, S>;     // (batch, seq, heads·D), then (batch, seq, qkv_width)
    if constexpr (PosEnc::enabled) {
      const T* rotated = f.kept;
      // recompute the probabilities (the output lands in tail, dropped)
      ops::attention_forward<B, S, H, KVH, D, Window>(f.ctx, view<B * S, out_width>(f, tail), view<B, H, S, S>(f, probs),
                                              view<B * S, qkv_width>(f, rotated));
      const auto drot = view<B * S, qkv_width>(f, tail);  // now the rotated gradient
      ops::zero(f.ctx, drot);
      ops::attention_backward<B, S, H, KVH, D, Window>(f.ctx, drot, view<B, H, S, S>(f, dprobs), view<B * S, out_width>(f, dout),
                                               view<B * S, qkv_width>(f, rotated), view<B, H, S, S>(f, probs));
      ops::rope_backward<B, S, H, KVH, D, PosEnc::base, PosEnc::template dims<D>, typename PosEnc::scaling>(f.ctx, view<B * S, qkv_width>(f, din), drot);
    } else {
      // recompute the probabilities
      ops::attention_forward<B, S, H, KVH, D, Window>(f.ctx, view<B * S, out_width>(f, tail), view<B, H, S, S>(f, probs),
                                              view<B * S, qkv_width>(f, in));
      ops::attention_backward<B, S, H, KVH, D, Window>(f.ctx, view<B * S, qkv_width>(f, din), view<B, H, S, S>(f, dprobs),
                                               view<B * S, out_width>(f, dout), view<B * S, qkv_width>(f, in),
                                               view<B, H, S, S>(f, probs));
    }
  }
};

/// A model (derived from its sequential body) executed through `Body` instead: Body has the
/// same parameters in the same places; only kept activations, workspace and the executor differ.
template <class Model, layer Body>
struct recompute_model : Model {
  using base_model = Model;
  using body = Body;
  static_assert(Body::param_count == Model::param_count, "weft::recompute_model: the body's parameters differ from the model's. Map layers without changing their parameters.");
  template <std::size_t B, std::size_t S>
  static constexpr std::size_t kept_count = Body::template kept_count<B, S>;
  template <std::size_t B, std::size_t S>
  static constexpr std::size_t scratch_count = Body::template scratch_count<B, S>;

  template <class F>
  static void forward(const F& f, const typename F::value_type* in, typename F::value_type* out) {
    Body::forward(f, in, out);
  }
  template <class F>
  static void backward(const F& f, const typename F::value_type* in, const typename F::value_type* dout,
                       typename F::value_type* din) {
    Body::backward(f, in, dout, din);
  }
};

}  // namespace weft

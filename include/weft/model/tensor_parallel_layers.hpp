#pragma once
// ---- the layers of one tensor-parallel rank (Megatron-LM) and sequence parallelism ----
// tp_shard_t (parallel/tensor_parallel.hpp) maps a model onto these; each talks to the
// tensor-parallel group through frame::tp. Megatron's two conjugate operators sit in them:
//   f  identity forward, all-reduce backward      (entry of a column-parallel linear)
//   g  all-reduce forward, identity backward      (exit of a row-parallel linear)
// With sequence parallelism (Korthikanti et al. 2022) the activations outside a tensor-
// parallel region hold this rank's slice of the sequence, (batch, seq/tp, width): f becomes
// an all-gather forward / reduce-scatter backward and g a reduce-scatter forward / all-gather
// backward. Rank r's slice is positions [r·seq/tp, (r+1)·seq/tp) of every sequence.
//
// Frames: a layer's frame says how many tokens per sequence the rows it sees hold. Under
// sequence parallelism the model runs on the slice (frame seq = seq/tp); tp_region switches
// a column ... row sequential to the whole sequence (frame seq = seq). So column/row linears
// see the whole sequence, the embedding, positions and LM head see the slice.
#include "weft/core/diagnostics.hpp"      // diag::divisible, diag::at_most
#include "weft/core/shape.hpp"            // shape, axis
#include "weft/model/layer.hpp"           // layer, leaf_layer, frame, tp_group, param_info
#include "weft/model/linear.hpp"          // packed, detail::linear_params
#include "weft/model/lm_head.hpp"         // tied, untied, detail::lm_head_params, detail::tied_offset
#include "weft/model/positional_embedding.hpp"  // positional_embedding (its parameters)
#include "weft/ops/accumulate.hpp"        // accumulate
#include "weft/ops/copy.hpp"              // copy
#include "weft/ops/embedding.hpp"         // positional_forward/backward
#include "weft/ops/fill.hpp"              // zero
#include "weft/ops/matmul.hpp"            // matmul_forward/backward, bias_backward
#include "weft/ops/views.hpp"             // packed_view, none
#include "weft/ops/vocab_slice.hpp"       // embedding_slice_*, vocab_slice_* (the vocabulary-parallel halves)

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>

namespace weft {

namespace detail {

// The tensor-parallel group of a sharded layer: set, and of the degree the layer was built for.
template <std::size_t TP, class F>
tp_group& tp_of(const F& f, const char* layer) {
  if (f.tp == nullptr || f.tp->size() != static_cast<int>(TP))
    throw std::logic_error(std::string("weft::") + layer + ": the frame has no tensor-parallel group of size " +
                           std::to_string(TP) + ". Run the sharded model through tensor_parallel_step (it sets frame::tp).");
  return *f.tp;
}

// ---- sequence-parallel collectives: slices (batch, seq/tp, width) <-> whole (batch, seq, width) ----
// The group's collectives are rank-major: (tp, batch, seq/tp, width). Whole sequences are
// (batch, tp, seq/tp, width); for batch 1 the two agree and no copy is made.

/// All-gather: every rank's slice (B, SL, W) -> the whole (B, TP·SL, W) on every rank.
/// `tmp`: TP·B·SL·W elements (unused when B == 1).
template <std::size_t TP, std::size_t B, std::size_t SL, std::size_t W, class Ctx, class T>
void sp_all_gather(const Ctx& ctx, tp_group& g, const T* slice, T* whole, T* tmp) {
  using S = context_space_t<Ctx>;
  constexpr std::size_t n = B * SL * W, run = SL * W;
  if constexpr (B == 1) {
    g.all_gather(slice, whole, n);
  } else {
    g.all_gather(slice, tmp, n);  // (tp, batch, seq/tp, width)
    for (std::size_t r = 0; r < TP; ++r)
      for (std::size_t b = 0; b < B; ++b)  // (seq/tp, width) runs
        ops::copy(ctx, packed_view<S, SL, W>(whole + (b * TP + r) * run), packed_view<S, SL, W>(tmp + (r * B + b) * run));
  }
}

/// Reduce-scatter: the whole (B, TP·SL, W) of every rank -> this rank's slice (B, SL, W) of
/// their sum. `tmp`: TP·B·SL·W elements (unused when B == 1).
template <std::size_t TP, std::size_t B, std::size_t SL, std::size_t W, class Ctx, class T>
void sp_reduce_scatter(const Ctx& ctx, tp_group& g, const T* whole, T* slice, T* tmp) {
  using S = context_space_t<Ctx>;
  constexpr std::size_t n = B * SL * W, run = SL * W;
  if constexpr (B == 1) {
    g.reduce_scatter_sum(whole, slice, n);
  } else {
    for (std::size_t r = 0; r < TP; ++r)
      for (std::size_t b = 0; b < B; ++b)  // (seq/tp, width) runs
        ops::copy(ctx, packed_view<S, SL, W>(tmp + (r * B + b) * run), packed_view<S, SL, W>(whole + (b * TP + r) * run));
    g.reduce_scatter_sum(tmp, slice, n);  // from (tp, batch, seq/tp, width)
  }
}

// Each packed segment of a column-parallel out axis is divisible by tp (packed<> = the whole axis).
template <std::size_t Out, std::size_t TP, class Packing>
constexpr bool segments_divisible() {
  if constexpr (Packing::count == 0) return Out % TP == 0;
  else {
    for (std::size_t w : Packing::widths)
      if (w % TP != 0) return false;
    return true;
  }
}
template <std::size_t Out, std::size_t TP, bool Divisible>
inline constexpr bool column_out_divisible = Divisible;  // prints Out and TP
}  // namespace detail

// ---- tp_region: a column ... row sequential on the whole sequence ----

/// Under sequence parallelism: runs `Inner` (a sequential that a column-parallel linear opens
/// and a row-parallel linear closes) with a frame of the whole sequence, while the frame
/// around it holds this rank's slice. The linears at its ends do the gathers and scatters.
template <layer Inner, std::size_t TP>
struct tp_region {
  using inner = Inner;
  static constexpr std::size_t in_width = Inner::in_width;
  static constexpr std::size_t out_width = Inner::out_width;
  static constexpr std::size_t param_count = Inner::param_count;
  template <std::size_t B, std::size_t S>
  static constexpr std::size_t kept_count = Inner::template kept_count<B, S * TP>;
  template <std::size_t B, std::size_t S>
  static constexpr std::size_t scratch_count = Inner::template scratch_count<B, S * TP>;

  static constexpr std::size_t find_param(std::string_view path) { return Inner::find_param(path); }
  template <class F>
  static void visit_params(const std::string& prefix, std::size_t base, const init_context& ic, F&& f) {
    Inner::visit_params(prefix, base, ic, f);
  }
  template <class F>
  static void forward(const F& f, const typename F::value_type* in, typename F::value_type* out) {
    Inner::forward(f.template resequenced<F::seq * TP>(), in, out);
  }
  template <class F>
  static void backward(const F& f, const typename F::value_type* in, const typename F::value_type* dout,
                       typename F::value_type* din) {
    Inner::backward(f.template resequenced<F::seq * TP>(), in, dout, din);
  }
};

// ---- column-parallel linear ----

/// linear<In, Out, role::column, ...> on one rank: the rank's Out/TP outputs (of each packed
/// segment: [q_r | k_r | v_r]), weight (Out/TP, In), bias (Out/TP).
/// Forward: f (identity; SP: all-gather the sequence slices of the input). Backward: the input
/// gradient is all-reduced (SP: reduce-scattered to the slices).
template <std::size_t In, std::size_t Out, std::size_t TP, bool SP, bool Bias, class Init, export_layout Export,
          class Packing>
struct column_parallel_linear : leaf_layer<detail::linear_params<In, Out / TP, role::column, Bias, Init, Export>> {
  static constexpr bool out_divisible =
      detail::column_out_divisible<Out, TP, detail::segments_divisible<Out, TP, Packing>()>;
  static_assert(out_divisible, "weft::tensor_parallel: a column-parallel linear's out width (or a packed segment of it) is not divisible by tp. Choose a tp that divides it.");
  using packing = Packing;
  static constexpr std::size_t out_local = Out / TP;
  static constexpr std::size_t in_width = In;
  static constexpr std::size_t out_width = out_local;
  template <std::size_t B, std::size_t S>
  static constexpr std::size_t kept_count = SP ? B * S * In : 0;  // the gathered input (batch, seq, in)
  template <std::size_t B, std::size_t S>
  static constexpr std::size_t scratch_count = SP ? 2 * B * S * In + B * S * In / TP : B * S * In;

  template <class F>
  static void forward(const F& f, const typename F::value_type* in, typename F::value_type* out) {
    constexpr std::size_t N = F::rows;
    const auto* x = in;  // (batch, seq, in)
    if constexpr (SP) {
      static_assert(diag::divisible<F::seq, TP>, "weft::tensor_parallel: with sequence_parallel, seq<S> must be divisible by tp (each rank keeps S/tp positions). Choose seq<S> divisible by tp, or drop sequence_parallel.");
      detail::sp_all_gather<TP, F::batch, F::seq / TP, In>(f.ctx, detail::tp_of<TP>(f, "column_parallel_linear"), in, f.kept,
                                                                  f.scratch);
      x = f.kept;
    }
    const auto y = view<N, out_local>(f, out);
    const auto xv = view<N, In>(f, x);
    const auto w = linear_weight<In, out_local>(f, f.params);  // (In, Out/TP) view of the (Out/TP, In) weight
    if constexpr (Bias)
      ops::matmul_forward<N, In, out_local>(f.ctx, y, xv, w, view<out_local>(f, f.params + In * out_local));
    else
      ops::matmul_forward<N, In, out_local>(f.ctx, y, xv, w, ops::none);
  }
  template <class F>
  static void backward(const F& f, const typename F::value_type* in, const typename F::value_type* dout,
                       typename F::value_type* din) {
    using T = typename F::value_type;
    constexpr std::size_t N = F::rows;
    const T* x = SP ? f.kept : in;
    // This rank's share of the input gradient, apart: din may already hold other paths' gradients.
    T* dx = din ? f.scratch : nullptr;  // (batch, seq, in)
    const auto dxv = view<N, In>(f, dx);  // a null dx: the input needs no gradient
    if (dx) ops::zero(f.ctx, dxv);
    const auto dw = linear_weight<In, out_local>(f, f.grads);
    const auto dy = view<N, out_local>(f, dout);
    const auto xv = view<N, In>(f, x);
    const auto w = linear_weight<In, out_local>(f, f.params);
    if constexpr (Bias)
      ops::matmul_backward<N, In, out_local>(f.ctx, dxv, dw, view<out_local>(f, f.grads ? f.grads + In * out_local : nullptr),
                                             dy, xv, w);
    else
      ops::matmul_backward<N, In, out_local>(f.ctx, dxv, dw, ops::none, dy, xv, w);
    if (!din) return;
    tp_group& g = detail::tp_of<TP>(f, "column_parallel_linear");
    if constexpr (SP) {
      T* slice = f.scratch + 2 * N * In;  // (batch, seq/tp, in)
      detail::sp_reduce_scatter<TP, F::batch, F::seq / TP, In>(f.ctx, g, dx, slice, f.scratch + N * In);
      ops::accumulate(f.ctx, view<N / TP, In>(f, din), view<N / TP, In>(f, slice));
    } else {
      g.all_reduce_sum(dx, N * In);
      ops::accumulate(f.ctx, view<N, In>(f, din), dxv);
    }
  }
};

// ---- row-parallel linear ----

/// linear<In, Out, role::row, ...> on one rank: weight (Out, In/TP) over the rank's slice of
/// the input features; the bias is whole and added once, after the reduction.
/// Forward: g (all-reduce the partial products; SP: reduce-scatter them to sequence slices).
/// Backward: identity (SP: all-gather the output gradient's slices first). Under SP the bias
/// gradient covers this rank's slice only, like every replicated parameter's (summed over tp
/// by the step).
template <std::size_t In, std::size_t Out, std::size_t TP, bool SP, bool Bias, class Init, export_layout Export>
struct row_parallel_linear : leaf_layer<detail::linear_params<In / TP, Out, role::row, Bias, Init, Export>> {
  static constexpr bool in_divisible = diag::divisible<In, TP>;
  static_assert(in_divisible, "weft::tensor_parallel: a row-parallel linear's in width is not divisible by tp. Choose a tp that divides it.");
  static constexpr std::size_t in_local = In / TP;
  static constexpr std::size_t in_width = in_local;
  static constexpr std::size_t out_width = Out;
  template <std::size_t B, std::size_t S>
  static constexpr std::size_t kept_count = 0;
  template <std::size_t B, std::size_t S>
  static constexpr std::size_t scratch_count = SP ? 2 * B * S * Out : 0;

  template <class F>
  static void forward(const F& f, const typename F::value_type* in, typename F::value_type* out) {
    using T = typename F::value_type;
    constexpr std::size_t N = F::rows;
    tp_group& g = detail::tp_of<TP>(f, "row_parallel_linear");
    const auto x = view<N, in_local>(f, in);
    const auto w = linear_weight<in_local, Out>(f, f.params);  // (In/TP, Out) view of the (Out, In/TP) weight
    if constexpr (SP) {
      static_assert(diag::divisible<F::seq, TP>, "weft::tensor_parallel: with sequence_parallel, seq<S> must be divisible by tp (each rank keeps S/tp positions). Choose seq<S> divisible by tp, or drop sequence_parallel.");
      T* partial = f.scratch;  // (batch, seq, out)
      ops::matmul_forward<N, in_local, Out>(f.ctx, view<N, Out>(f, partial), x, w, ops::none);
      detail::sp_reduce_scatter<TP, F::batch, F::seq / TP, Out>(f.ctx, g, partial, out, f.scratch + N * Out);
    } else {
      ops::matmul_forward<N, in_local, Out>(f.ctx, view<N, Out>(f, out), x, w, ops::none);
      g.all_reduce_sum(out, N * Out);
    }
    if constexpr (Bias) {
      constexpr std::size_t rows_out = SP ? N / TP : N;  // rows of out: SP, this rank's sequence slice
      ops::accumulate_rows<rows_out, Out>(f.ctx, view<rows_out, Out>(f, out), view<Out>(f, f.params + in_local * Out));
    }
  }
  template <class F>
  static void backward(const F& f, const typename F::value_type* in, const typename F::value_type* dout,
                       typename F::value_type* din) {
    using T = typename F::value_type;
    constexpr std::size_t N = F::rows;
    T* dbias = (Bias && f.grads) ? f.grads + in_local * Out : nullptr;
    const auto dx = view<N, in_local>(f, din);  // a null din: the input needs no gradient
    const auto dw = linear_weight<in_local, Out>(f, f.grads);
    const auto x = view<N, in_local>(f, in);
    const auto w = linear_weight<in_local, Out>(f, f.params);
    if constexpr (SP) {
      T* dy = f.scratch;  // (batch, seq, out)
      detail::sp_all_gather<TP, F::batch, F::seq / TP, Out>(f.ctx, detail::tp_of<TP>(f, "row_parallel_linear"), dout, dy,
                                                                   f.scratch + N * Out);
      ops::matmul_backward<N, in_local, Out>(f.ctx, dx, dw, ops::none, view<N, Out>(f, dy), x, w);
      if (dbias) ops::bias_backward<N / TP, Out>(f.ctx, view<Out>(f, dbias), view<N / TP, Out>(f, dout));  // this rank's slice
    } else {
      const auto dy = view<N, Out>(f, dout);
      if constexpr (Bias)
        ops::matmul_backward<N, in_local, Out>(f.ctx, dx, dw, view<Out>(f, dbias), dy, x, w);  // a null dbias: no gradient
      else
        ops::matmul_backward<N, in_local, Out>(f.ctx, dx, dw, ops::none, dy, x, w);
    }
  }
};

// ---- vocabulary-parallel token embedding ----

/// token_embedding<V, C> on one rank: rows [r·V/TP, (r+1)·V/TP) of the table. A token
/// outside them contributes zeros; the partial embeddings are all-reduced (SP: reduce-
/// scattered to this rank's sequence slice). The token ids are always the whole micro-batch.
template <std::size_t V, std::size_t C, std::size_t TP, bool SP>
struct vocab_parallel_embedding
    : leaf_layer<param_list<param<"weight", shape<axis<"vocab", V / TP>, axis<"width", C>>, role::vocab, init::normal<20>>>> {
  static constexpr bool vocab_divisible = diag::divisible<V, TP>;
  static_assert(vocab_divisible, "weft::tensor_parallel: vocab is not divisible by tp. Pad the vocabulary to a multiple of tp (GPT-2 pads 50257 to 50304).");
  static constexpr std::size_t vocab_size = V;
  static constexpr std::size_t vocab_local = V / TP;
  static constexpr std::size_t in_width = 0;
  static constexpr std::size_t out_width = C;
  template <std::size_t B, std::size_t S>
  static constexpr std::size_t kept_count = 0;
  template <std::size_t B, std::size_t S>
  static constexpr std::size_t scratch_count = SP ? 2 * B * S * TP * C : 0;

  template <class F>
  static void forward(const F& f, const typename F::value_type*, typename F::value_type* out) {
    using T = typename F::value_type;
    constexpr std::size_t N = F::batch * F::seq * (SP ? TP : 1);  // tokens of the whole micro-batch
    tp_group& g = detail::tp_of<TP>(f, "vocab_parallel_embedding");
    const std::size_t lo = static_cast<std::size_t>(g.rank()) * vocab_local;
    T* partial = SP ? f.scratch : out;  // (batch, seq, width)
    ops::embedding_slice_forward<N, vocab_local, C>(f.ctx, view<N, C>(f, partial), view<N>(f, f.tokens),
                                                    view<vocab_local, C>(f, f.params), lo);  // zeros off the slice
    if constexpr (SP) detail::sp_reduce_scatter<TP, F::batch, F::seq, C>(f.ctx, g, partial, out, f.scratch + N * C);
    else g.all_reduce_sum(out, N * C);
  }
  template <class F>
  static void backward(const F& f, const typename F::value_type*, const typename F::value_type* dout,
                       typename F::value_type*) {
    using T = typename F::value_type;
    if (!f.grads) return;
    constexpr std::size_t N = F::batch * F::seq * (SP ? TP : 1);
    tp_group& g = detail::tp_of<TP>(f, "vocab_parallel_embedding");
    const std::size_t lo = static_cast<std::size_t>(g.rank()) * vocab_local;
    const T* dy = dout;  // (batch, seq, width)
    if constexpr (SP) {
      detail::sp_all_gather<TP, F::batch, F::seq, C>(f.ctx, g, dout, f.scratch, f.scratch + N * C);
      dy = f.scratch;
    }
    ops::embedding_slice_backward<N, vocab_local, C>(f.ctx, view<vocab_local, C>(f, f.grads), view<N, C>(f, dy),
                                                     view<N>(f, f.tokens), lo);
  }
};

// ---- learned positions on a sequence slice ----

/// positional_embedding<Context, C> under sequence parallelism: the frame holds positions
/// [r·S, (r+1)·S) of each sequence (S = the frame's seq), so rank r adds those rows of the
/// (whole, replicated) table; its gradient covers them only.
template <std::size_t Context, std::size_t C, std::size_t TP>
struct sequence_parallel_positional : leaf_layer<typename positional_embedding<Context, C>::params> {
  static constexpr std::size_t in_width = C;
  static constexpr std::size_t out_width = C;
  template <std::size_t B, std::size_t S>
  static constexpr std::size_t kept_count = 0;
  template <std::size_t B, std::size_t S>
  static constexpr std::size_t scratch_count = 0;

  template <class F>
  static void forward(const F& f, const typename F::value_type* in, typename F::value_type* out) {
    constexpr bool fits = diag::at_most<F::seq * TP, Context>;
    static_assert(fits, "weft::positional_embedding: the sequence is longer than the context. Raise context<N> or shorten seq<N>.");
    const std::size_t first = static_cast<std::size_t>(detail::tp_of<TP>(f, "sequence_parallel_positional").rank()) * F::seq;
    const auto y = view<F::rows, C>(f, out);
    if (out != in) ops::copy(f.ctx, y, view<F::rows, C>(f, in));
    // (batch, seq/tp, width) += its rows, (seq/tp, width) of the (context, width) table
    ops::positional_forward<F::batch, F::seq, C>(f.ctx, y, view<F::seq, C>(f, f.params + first * C));
  }
  template <class F>
  static void backward(const F& f, const typename F::value_type*, const typename F::value_type* dout,
                       typename F::value_type* din) {
    const std::size_t first = static_cast<std::size_t>(detail::tp_of<TP>(f, "sequence_parallel_positional").rank()) * F::seq;
    const auto dy = view<F::rows, C>(f, dout);
    if (f.grads) ops::positional_backward<F::batch, F::seq, C>(f.ctx, view<F::seq, C>(f, f.grads + first * C), dy);
    ops::accumulate(f.ctx, view<F::rows, C>(f, din), dy);
  }
};

// ---- vocabulary-parallel LM head ----

/// lm_head<V, C, Tie> on one rank: logits of tokens [r·V/TP, (r+1)·V/TP), from its own
/// (V/TP, C) shard or, tied, from the embedding's shard on this rank. The input gradient is
/// all-reduced (SP: the input slices are all-gathered first and the gradient reduce-
/// scattered back). The logits always cover the whole micro-batch: (batch, seq, vocab/tp);
/// the loss is vocab_parallel_cross_entropy.
template <std::size_t V, std::size_t C, class Tie, std::size_t TP, bool SP>
struct vocab_parallel_lm_head : leaf_layer<detail::lm_head_params<V / TP, C, Tie>> {
  static constexpr bool vocab_divisible = diag::divisible<V, TP>;
  static_assert(vocab_divisible, "weft::tensor_parallel: vocab is not divisible by tp. Pad the vocabulary to a multiple of tp (GPT-2 pads 50257 to 50304).");
  static constexpr std::size_t vocab_size = V;
  static constexpr std::size_t vocab_local = V / TP;
  static constexpr std::size_t in_width = C;
  static constexpr std::size_t out_width = vocab_local;
  template <std::size_t B, std::size_t S>
  static constexpr std::size_t kept_count = SP ? B * S * TP * C : 0;  // the gathered input
  template <std::size_t B, std::size_t S>
  static constexpr std::size_t scratch_count = SP ? 2 * B * S * TP * C + B * S * C : B * S * C;

  template <class F>
  static auto* weight(const F& f) {
    if constexpr (Tie::is_tied) return f.root_param(detail::tied_offset<typename F::root_type, Tie>());
    else return f.params;
  }
  template <class F>
  static auto* weight_grad(const F& f) {
    if constexpr (Tie::is_tied) return f.root_grad(detail::tied_offset<typename F::root_type, Tie>());
    else return f.grads;
  }

  template <class F>
  static void forward(const F& f, const typename F::value_type* in, typename F::value_type* out) {
    constexpr std::size_t N = F::rows * (SP ? TP : 1);  // rows of the whole micro-batch
    const auto* x = in;                                   // (batch, seq, width)
    if constexpr (SP) {
      detail::sp_all_gather<TP, F::batch, F::seq, C>(f.ctx, detail::tp_of<TP>(f, "vocab_parallel_lm_head"), in, f.kept, f.scratch);
      x = f.kept;
    }
    // (batch, seq, vocab/tp) = (batch, seq, width) · Wᵀ, W stored (vocab/tp, width)
    ops::matmul_forward<N, C, vocab_local>(f.ctx, view<N, vocab_local>(f, out), view<N, C>(f, x),
                                           linear_weight<C, vocab_local>(f, weight(f)), ops::none);
  }
  template <class F>
  static void backward(const F& f, const typename F::value_type* in, const typename F::value_type* dout,
                       typename F::value_type* din) {
    using T = typename F::value_type;
    constexpr std::size_t N = F::rows * (SP ? TP : 1);
    const T* x = SP ? f.kept : in;
    T* dx = din ? f.scratch : nullptr;  // (batch, seq, width)
    const auto dxv = view<N, C>(f, dx);  // a null dx: the input needs no gradient
    if (dx) ops::zero(f.ctx, dxv);
    ops::matmul_backward<N, C, vocab_local>(f.ctx, dxv, linear_weight<C, vocab_local>(f, weight_grad(f)), ops::none,
                                            view<N, vocab_local>(f, dout), view<N, C>(f, x),
                                            linear_weight<C, vocab_local>(f, weight(f)));
    if (!din) return;
    tp_group& g = detail::tp_of<TP>(f, "vocab_parallel_lm_head");
    if constexpr (SP) {
      T* slice = f.scratch + 2 * N * C;  // (batch, seq/tp, width)
      detail::sp_reduce_scatter<TP, F::batch, F::seq, C>(f.ctx, g, dx, slice, f.scratch + N * C);
      ops::accumulate(f.ctx, view<F::rows, C>(f, din), view<F::rows, C>(f, slice));
    } else {
      g.all_reduce_sum(dx, N * C);
      ops::accumulate(f.ctx, view<N, C>(f, din), dxv);
    }
  }
};

// ---- vocabulary-parallel softmax cross-entropy ----

/// Elements of `double` workspace the vocabulary-parallel loss needs for N rows.
template <std::size_t N>
inline constexpr std::size_t vocab_parallel_cross_entropy_work = 3 * N;

namespace detail {
// Per row: the max over the whole vocabulary, sum(exp(z - max)) and the target's logit, from
// every rank's slice (VL logits, tokens [lo, lo + VL)). work: (3N) doubles.
template <std::size_t N, std::size_t VL, class Ctx, class T>
void vocab_parallel_statistics(const Ctx& ctx, tp_group& g, const T* logits, const std::int32_t* targets,
                               std::size_t lo, double* work) {
  using S = context_space_t<Ctx>;
  double* mx = work;        // (N)
  double* sums = work + N;  // (N, 2): sum of exps, target logit
  const auto z = packed_view<S, N, VL>(logits);
  ops::vocab_slice_row_max<N, VL>(ctx, packed_view<S, N>(mx), z);
  g.all_reduce_max(mx, N);
  ops::vocab_slice_sum_exp<N, VL>(ctx, packed_view<S, N, 2>(sums), z, packed_view<S, N>(targets), lo,
                                  packed_view<S, N>(mx));
  g.all_reduce_sum(sums, 2 * N);
}
}  // namespace detail

/// Training form of the softmax cross-entropy when the logits' vocabulary axis is split over
/// the tp group: rank r holds logits(N, VL) of tokens [r·VL, (r+1)·VL). losses(N) get the
/// per-row loss (the same on every rank); the logits are overwritten with this rank's slice of
/// dloss·(softmax - onehot(target)). Negative targets: loss 0, zero gradient. Three all-
/// reductions of N rows (max; sum of exps with the target logit). work: (3N) doubles.
/// bf16 logits: float losses and dloss (the compute type), as the whole-vocabulary op.
template <std::size_t N, std::size_t VL, class Ctx, class T, class L>
void vocab_parallel_cross_entropy_forward_backward(const Ctx& ctx, tp_group& g, L* losses, T* logits_to_dlogits,
                                                   const std::int32_t* targets,
                                                   std::type_identity_t<ops::compute_t<T>> dloss, double* work) {
  const std::size_t lo = static_cast<std::size_t>(g.rank()) * VL;
  detail::vocab_parallel_statistics<N, VL>(ctx, g, logits_to_dlogits, targets, lo, work);
  using S = context_space_t<Ctx>;
  ops::vocab_slice_cross_entropy_backward<N, VL>(ctx, packed_view<S, N>(losses), packed_view<S, N, VL>(logits_to_dlogits),
                                                 packed_view<S, N>(targets), lo, dloss,
                                                 packed_view<S, vocab_parallel_cross_entropy_work<N>>(work));
}

/// Evaluation form: losses(N) only, logits untouched.
template <std::size_t N, std::size_t VL, class Ctx, class T, class L>
void vocab_parallel_cross_entropy_forward(const Ctx& ctx, tp_group& g, L* losses, const T* logits,
                                          const std::int32_t* targets, double* work) {
  detail::vocab_parallel_statistics<N, VL>(ctx, g, logits, targets, static_cast<std::size_t>(g.rank()) * VL, work);
  using S = context_space_t<Ctx>;
  ops::vocab_slice_cross_entropy_loss<N, VL>(ctx, packed_view<S, N>(losses), packed_view<S, N>(targets),
                                             packed_view<S, vocab_parallel_cross_entropy_work<N>>(work));
}

}  // namespace weft

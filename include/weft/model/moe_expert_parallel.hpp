#pragma once
// ---- expert parallelism of a mixture of experts: experts split over ranks, tokens sent to them ----
// moe_expert_parallel<Moe, EP> runs moe_mlp `Moe` on one rank of an expert-parallel group of EP
// ranks (model/expert_group.hpp). Rank r holds the router and the shared expert whole, and the
// E/EP experts [r·E/EP, (r+1)·E/EP) (El = E/EP of them); each rank brings its own tokens.
//   forward   route the local tokens; group them by expert (the groups of rank q's experts are
//             contiguous, since experts are dealt out in blocks); all_to_all the per-expert row
//             counts; all_to_all_v the rows to their experts' ranks; run the local experts on
//             the rows received, source rank by source rank (each source's rows are grouped by
//             expert); all_to_all_v the outputs back; combine with the gates locally.
//   backward  the same exchanges in reverse: output gradients out, input gradients back.
// Dropless and statically planned: a rank may receive every routed row of the group, so the
// receive-side buffers hold EP·N·k rows (N the local tokens). A capacity factor would bound
// this at the cost of dropping tokens; it is not implemented.
// Parameter block of a rank: gate.weight (E, C) | experts' first matrices (El, ·, C) |
// down_proj (El, C, F) | the shared expert's. Gradients: the router's and the shared expert's
// are this rank's tokens' only (the caller sums them over the group, and over data parallelism);
// an expert's are complete over the group's tokens (sum them over data parallelism only).
// The load-balancing loss is each rank's own tokens' (as with data parallelism).
#include "weft/model/aux_loss.hpp"      // aux_losses
#include "weft/model/expert_group.hpp"  // expert_group
#include "weft/model/layer.hpp"         // frame
#include "weft/model/moe.hpp"           // moe_mlp and its options
#include "weft/ops/accumulate.hpp"      // accumulate
#include "weft/ops/fill.hpp"            // zero
#include "weft/ops/gelu.hpp"            // gelu_forward/backward
#include "weft/ops/grouped_matmul.hpp"  // grouped_matmul_forward/backward
#include "weft/ops/matmul.hpp"          // matmul_forward/backward
#include "weft/ops/moe_dispatch.hpp"    // moe_dispatch_plan, moe_gather, moe_combine
#include "weft/ops/swiglu.hpp"          // swiglu_forward/backward
#include "weft/ops/topk_router.hpp"     // topk_router_forward/backward, load_balance_loss

#include <array>
#include <cstddef>
#include <cstdint>
#include <stdexcept>

namespace weft {

namespace detail {
template <std::size_t E, std::size_t EP>
inline constexpr bool experts_divisible_by_ep = EP > 0 && E % EP == 0;
}  // namespace detail

/// moe_mlp `Moe` on one rank of an expert-parallel group of `EP` ranks (see the top of the file).
template <class Moe, std::size_t EP>
struct moe_expert_parallel {
  static constexpr std::size_t C = Moe::width, E = Moe::experts, K = Moe::top_k, F = Moe::ffn, H1 = Moe::expert_in;
  static constexpr bool divisible = detail::experts_divisible_by_ep<E, EP>;
  static_assert(divisible, "weft::moe_expert_parallel: the number of experts is not divisible by the expert-parallel size. Choose an ep that divides the experts.");
  static constexpr std::size_t El = divisible ? E / EP : 1;  ///< experts per rank
  static constexpr bool per_layer_aux = !Moe::pooled_aux;
  static_assert(per_layer_aux, "weft::moe_expert_parallel: pooled_aux_loss (transformers' pooled load-balancing loss) is not supported under expert parallelism. Build the moe_mlp without pooled_aux_loss (one loss per layer).");
  using shared_type = typename Moe::shared_type;
  static constexpr bool has_shared = Moe::has_shared;

  // ---- this rank's parameter block ----
  static constexpr std::size_t gate_offset = 0;
  static constexpr std::size_t w1_offset = E * C;
  static constexpr std::size_t w1_size = El * H1 * C;
  static constexpr std::size_t w2_offset = w1_offset + w1_size;
  static constexpr std::size_t w2_size = El * C * F;
  static constexpr std::size_t own_param_count = w2_offset + w2_size;
  static constexpr std::size_t param_count = own_param_count + shared_type::param_count;
  /// Where rank r's experts' matrices sit in the whole layer's block (Moe's layout).
  static constexpr std::size_t full_w1_offset(std::size_t r) { return Moe::w1_offset + r * w1_size; }
  static constexpr std::size_t full_w2_offset(std::size_t r) { return Moe::w2_offset + r * w2_size; }

  // ---- kept block (elements): N local tokens, R = N·k routed rows, RM = EP·R received rows at most ----
  template <std::size_t B, std::size_t S>
  struct kept_layout {
    static constexpr std::size_t N = B * S, R = N * K, RM = EP * R;
    static constexpr std::size_t probs = 0;                 // (N, E)
    static constexpr std::size_t gates = probs + N * E;     // (N, k)
    static constexpr std::size_t ye = gates + N * K;        // (R, C) expert outputs, back home
    static constexpr std::size_t xr = ye + R * C;           // (RM, C) rows received
    static constexpr std::size_t pre = xr + RM * C;         // (RM, H1)
    static constexpr std::size_t act = pre + RM * H1;       // (RM, F)
    static constexpr std::size_t ints = act + RM * F;       // int32 routing, below
    // choices (R), slots (R), tokens (R), offsets (E + 1), send rows (EP), receive rows (EP),
    // per-expert counts received (EP·El), segment offsets per source (EP·(El + 1))
    static constexpr std::size_t int_count = 3 * R + (E + 1) + 2 * EP + EP * El + EP * (El + 1);
    static constexpr std::size_t shared = ints + int_count;
    static constexpr std::size_t total = shared + shared_type::template kept_count<B, S>;
  };
  template <std::size_t B, std::size_t S>
  static constexpr std::size_t kept_count = kept_layout<B, S>::total;

  template <std::size_t B, std::size_t S>
  static constexpr std::size_t own_scratch = [] {
    constexpr std::size_t N = B * S, R = N * K, RM = EP * R;
    constexpr std::size_t fwd = R * C + RM * C + (has_shared ? N * C : 0);  // xe, yr, shared out
    constexpr std::size_t bwd = R * C + RM * C + RM * F + RM * H1 + RM * C + R * C + N * K + N * E;
    return fwd > bwd ? fwd : bwd;
  }();
  template <std::size_t B, std::size_t S>
  static constexpr std::size_t scratch_count = own_scratch<B, S> + shared_type::template scratch_count<B, S>;

  template <class Fr>
  static void forward(const Fr& f, expert_group& g, const typename Fr::value_type* in, typename Fr::value_type* out) {
    using T = typename Fr::value_type;
    using L = kept_layout<Fr::batch, Fr::seq>;
    constexpr std::size_t N = L::N, R = L::R, RM = L::RM;
    check_group(g);
    const routing rt = routing_of(f);
    T* probs = f.kept + L::probs;
    T* gates = f.kept + L::gates;
    const auto x = view<N, C>(f, in);
    ops::matmul_forward<N, C, E>(f.ctx, view<N, E>(f, probs), x, linear_weight<C, E>(f, f.params + gate_offset),
                                 ops::none);
    ops::topk_router_forward<N, E, K>(f.ctx, view<N, E>(f, probs), view<N, K>(f, gates), view<N, K>(f, rt.choices),
                                      view<N, E>(f, probs));
    ops::moe_dispatch_plan<N, E, K>(f.ctx, view<E + 1>(f, rt.offsets), view<R>(f, rt.slots), view<R>(f, rt.tokens),
                                    view<N, K>(f, rt.choices));
    T* xe = f.scratch;  // (R, C) local rows grouped by expert, so by destination rank
    ops::moe_gather<N, K, C>(f.ctx, view<R, C>(f, xe), x, view<R>(f, rt.tokens));
    // counts: per expert of rank q to q; then rows per rank both ways
    std::array<std::int32_t, EP * El> send_expert{};
    for (std::size_t e = 0; e < E; ++e) send_expert[e] = rt.offsets[e + 1] - rt.offsets[e];
    g.all_to_all(send_expert.data(), rt.recv_expert, El);
    for (std::size_t q = 0; q < EP; ++q) {
      rt.send_rows[q] = rt.offsets[(q + 1) * El] - rt.offsets[q * El];
      rt.recv_rows[q] = 0;
      std::int32_t* so = rt.segment_offsets + q * (El + 1);
      so[0] = 0;
      for (std::size_t j = 0; j < El; ++j) {
        rt.recv_rows[q] += rt.recv_expert[q * El + j];
        so[j + 1] = so[j] + rt.recv_expert[q * El + j];
      }
    }
    T* xr = f.kept + L::xr;  // (RM, C)
    exchange(g, xe, rt.send_rows, R, xr, rt.recv_rows, RM);
    // the local experts, one source rank's rows at a time
    T* pre = f.kept + L::pre;
    T* act = f.kept + L::act;
    T* yr = f.scratch + R * C;  // (RM, C)
    // Rows not received stay zero: defined, unused. The whole block is zeroed first (its size is
    // static) and the received rows then overwritten (the products write their output, beta 0).
    ops::zero(f.ctx, view<RM, H1>(f, pre));
    const auto w1 = view<El, H1, C>(f, f.params + w1_offset);
    const auto w2 = view<El, C, F>(f, f.params + w2_offset);
    // each source rank's rows: views at their first row, of the op's extents (as the product reads
    // only the rows its segment offsets name)
    std::size_t base = 0;
    for (std::size_t p = 0; p < EP; ++p) {
      ops::grouped_matmul_forward<RM, C, H1, El>(f.ctx, view<RM, H1>(f, pre + base * H1), view<RM, C>(f, xr + base * C),
                                                 w1, view<El + 1>(f, rt.segment_offsets + p * (El + 1)));
      base += static_cast<std::size_t>(rt.recv_rows[p]);
    }
    if constexpr (Moe::swiglu) ops::swiglu_forward<RM, F>(f.ctx, view<RM, F>(f, act), view<RM, H1>(f, pre));
    else ops::gelu_forward<RM * F>(f.ctx, view<RM, F>(f, act), view<RM, F>(f, pre));
    base = 0;
    for (std::size_t p = 0; p < EP; ++p) {
      ops::grouped_matmul_forward<RM, F, C, El>(f.ctx, view<RM, C>(f, yr + base * C), view<RM, F>(f, act + base * F), w2,
                                                view<El + 1>(f, rt.segment_offsets + p * (El + 1)));
      base += static_cast<std::size_t>(rt.recv_rows[p]);
    }
    T* ye = f.kept + L::ye;  // (R, C)
    exchange(g, yr, rt.recv_rows, RM, ye, rt.send_rows, R);
    ops::moe_combine_forward<N, K, C>(f.ctx, view<N, C>(f, out), view<R, C>(f, ye), view<N, K>(f, gates),
                                      view<N, K>(f, rt.slots));
    if constexpr (has_shared) {
      T* sh = f.scratch + R * C + RM * C;  // (N, C)
      shared_type::forward(shared_frame(f), in, sh);
      ops::accumulate(f.ctx, view<N, C>(f, out), view<N, C>(f, sh));
    }
  }

  template <class Fr>
  static void backward(const Fr& f, expert_group& g, const typename Fr::value_type* in,
                       const typename Fr::value_type* dout, typename Fr::value_type* din) {
    using T = typename Fr::value_type;
    using L = kept_layout<Fr::batch, Fr::seq>;
    constexpr std::size_t N = L::N, R = L::R, RM = L::RM;
    check_group(g);
    if constexpr (has_shared) {
      const Fr sf = shared_frame(f);
      shared_type::backward(sf, in, dout, din);
      sf.report_grads_final();
    }
    const routing rt = routing_of(f);
    const T* probs = f.kept + L::probs;
    const T* gates = f.kept + L::gates;
    // workspace: dye (R, C), dyr (RM, C), dact (RM, F), dpre (RM, H1), dxr (RM, C), dxe (R, C),
    // dgates (N, k), dlogits (N, E)
    T* dye = f.scratch;
    T* dyr = dye + R * C;
    T* dact = dyr + RM * C;
    T* dpre = dact + RM * F;
    T* dxr = dpre + RM * H1;
    T* dxe = dxr + RM * C;
    T* dgates = dxe + R * C;
    T* dlogits = dgates + N * K;
    ops::zero(f.ctx, view<R * C + RM * C + RM * F + RM * H1 + RM * C + R * C + N * K + N * E>(f, dye));
    ops::moe_combine_backward<N, K, C>(f.ctx, view<R, C>(f, dye), view<N, K>(f, dgates), view<N, C>(f, dout),
                                       view<R, C>(f, f.kept + L::ye), view<N, K>(f, gates), view<N, K>(f, rt.slots));
    exchange(g, dye, rt.send_rows, R, dyr, rt.recv_rows, RM);
    const auto w1 = view<El, H1, C>(f, f.params + w1_offset);
    const auto w2 = view<El, C, F>(f, f.params + w2_offset);
    const auto dw1 = view<El, H1, C>(f, f.grads + w1_offset);
    const auto dw2 = view<El, C, F>(f, f.grads + w2_offset);
    std::size_t base = 0;
    for (std::size_t p = 0; p < EP; ++p) {
      ops::grouped_matmul_backward<RM, F, C, El>(f.ctx, view<RM, F>(f, dact + base * F), dw2, view<RM, C>(f, dyr + base * C),
                                                 view<RM, F>(f, f.kept + L::act + base * F), w2,
                                                 view<El + 1>(f, rt.segment_offsets + p * (El + 1)));
      base += static_cast<std::size_t>(rt.recv_rows[p]);
    }
    if constexpr (Moe::swiglu)
      ops::swiglu_backward<RM, F>(f.ctx, view<RM, H1>(f, dpre), view<RM, H1>(f, f.kept + L::pre), view<RM, F>(f, dact));
    else
      ops::gelu_backward<RM * F>(f.ctx, view<RM, F>(f, dpre), view<RM, F>(f, f.kept + L::pre), view<RM, F>(f, dact));
    base = 0;
    for (std::size_t p = 0; p < EP; ++p) {
      ops::grouped_matmul_backward<RM, C, H1, El>(f.ctx, view<RM, C>(f, dxr + base * C), dw1, view<RM, H1>(f, dpre + base * H1),
                                                  view<RM, C>(f, f.kept + L::xr + base * C), w1,
                                                  view<El + 1>(f, rt.segment_offsets + p * (El + 1)));
      base += static_cast<std::size_t>(rt.recv_rows[p]);
    }
    exchange(g, dxr, rt.recv_rows, RM, dxe, rt.send_rows, R);
    ops::moe_gather_backward<N, K, C>(f.ctx, view<N, C>(f, din), view<R, C>(f, dxe), view<N, K>(f, rt.slots));
    ops::topk_router_backward<N, E, K>(f.ctx, view<N, E>(f, dlogits), view<N, K>(f, dgates), view<N, E>(f, probs),
                                       view<N, K>(f, gates), view<N, K>(f, rt.choices));
    if constexpr (Moe::aux_alpha > 0) {
      auto& meter = aux_losses();
      const double aux = ops::load_balance_loss<N, E, K>(
          f.ctx, view<N, E>(f, meter.gradient_scale != 0 ? dlogits : nullptr), view<N, E>(f, probs),
          view<N, K>(f, rt.choices), Moe::aux_alpha, meter.gradient_scale);
      meter.record(aux);
    }
    ops::matmul_backward<N, C, E>(f.ctx, view<N, C>(f, din), linear_weight<C, E>(f, f.grads + gate_offset), ops::none,
                                  view<N, E>(f, dlogits), view<N, C>(f, in),
                                  linear_weight<C, E>(f, f.params + gate_offset));
  }

 private:
  struct routing {
    std::int32_t *choices, *slots, *tokens, *offsets, *send_rows, *recv_rows, *recv_expert, *segment_offsets;
  };
  template <class Fr>
  static routing routing_of(const Fr& f) {
    using L = kept_layout<Fr::batch, Fr::seq>;
    static_assert(sizeof(typename Fr::value_type) >= sizeof(std::int32_t), "weft::moe_expert_parallel: the routing is kept as int32 in the element type's slots, which must be at least 4 bytes. Use float or double.");
    auto* p = reinterpret_cast<std::int32_t*>(f.kept + L::ints);
    routing r;
    r.choices = p;
    r.slots = r.choices + L::R;
    r.tokens = r.slots + L::R;
    r.offsets = r.tokens + L::R;
    r.send_rows = r.offsets + E + 1;
    r.recv_rows = r.send_rows + EP;
    r.recv_expert = r.recv_rows + EP;
    r.segment_offsets = r.recv_expert + EP * El;
    return r;
  }
  // Rows of C elements: counts in rows, sent as elements.
  template <class T>
  static void exchange(expert_group& g, const T* in, const std::int32_t* send_rows, std::size_t in_rows, T* out,
                       const std::int32_t* recv_rows, std::size_t out_rows) {
    std::array<int, EP> sc{}, rc{};
    for (std::size_t q = 0; q < EP; ++q) {
      sc[q] = static_cast<int>(static_cast<std::size_t>(send_rows[q]) * C);
      rc[q] = static_cast<int>(static_cast<std::size_t>(recv_rows[q]) * C);
    }
    g.all_to_all_v(in, sc.data(), in_rows * C, out, rc.data(), out_rows * C);
  }
  static void check_group(const expert_group& g) {
    if (static_cast<std::size_t>(g.size()) != EP)
      throw std::invalid_argument("weft::moe_expert_parallel: the expert group's size differs from the EP the layer was built for. Build the layer with the group's size.");
  }
  template <class Fr>
  static Fr shared_frame(const Fr& f) {
    return f.child(own_param_count, kept_layout<Fr::batch, Fr::seq>::shared, own_scratch<Fr::batch, Fr::seq>);
  }
};

}  // namespace weft

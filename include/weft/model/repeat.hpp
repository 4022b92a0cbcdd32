#pragma once
// ---- repeat: N copies of a layer, chained (the transformer's stack of blocks) ----
// The copies share one type, so compile time does not grow with N: copy i's parameters sit at
// i * Block::param_count, its kept activations at i * Block::kept_count, and the inputs of
// copies 1..N-1 after those. `First` numbers the copies from First on: a pipeline stage that
// holds blocks 4..7 of a model is repeat<4, Block, 4>, its parameters still "4.…" to "7.…".
// When the frame has a window over this stack (block_window_hook): under ZeRO-3 copy i's
// parameters are where the window puts them, asked for before each copy runs forward or
// backward, with the copy that runs next named so that it can be fetched meanwhile; under
// ZeRO-2 and 3 each copy's backward writes its gradients into a zeroed window asked for
// before it, handed back (grads_done) when it ends. Copy i runs with frame::layer = First + i
// (its index in the model's stack, whichever stage holds it).
#include "weft/core/diagnostics.hpp"  // diag::equal
#include "weft/model/layer.hpp"       // layer, frame
#include "weft/model/layer_check.hpp" // checked_layer_t
#include "weft/ops/fill.hpp"          // zero

#include <algorithm>
#include <cstddef>
#include <string>
#include <string_view>

namespace weft {

/// `repeat<12, block<...>>`: parameters named "0.…", "1.…", … (under a `named` prefix: "h.0.…");
/// `repeat<N, Block, First>` names them First, First+1, …, First+N-1.
template <std::size_t N, class BlockLayer, std::size_t First = 0>
struct repeat {
  using Block = checked_layer_t<BlockLayer>;  // BlockLayer, or a stand-in after its diagnostic
  static_assert(N > 0, "weft::repeat: zero copies. Use repeat<N, Block> with N >= 1.");
  static constexpr bool width_preserving = diag::equal<Block::in_width, Block::out_width>;
  static_assert(width_preserving, "weft::repeat: the block changes the width, so copies cannot be chained. Repeat only width-preserving blocks.");
  using block_type = Block;
  static constexpr std::size_t count = N;
  static constexpr std::size_t first = First;
  static constexpr std::size_t in_width = Block::in_width;
  static constexpr std::size_t out_width = Block::out_width;
  static constexpr std::size_t param_count = N * Block::param_count;
  template <std::size_t B, std::size_t S>
  static constexpr std::size_t kept_count = N * Block::template kept_count<B, S> + (N - 1) * B * S * in_width;
  template <std::size_t B, std::size_t S>
  static constexpr std::size_t pingpong = (N > 1) ? 2 * B * S * in_width : 0;
  template <std::size_t B, std::size_t S>
  static constexpr std::size_t scratch_count = pingpong<B, S> + Block::template scratch_count<B, S>;

  static constexpr std::size_t find_param(std::string_view path) {
    // The copy index, written as visit_params writes it: decimal, no leading zeros ("01" names
    // nothing), in [First, First + N) (the bound checked per digit, so a long run of digits
    // cannot wrap around).
    std::size_t i = 0, k = 0;
    while (k < path.size() && path[k] >= '0' && path[k] <= '9') {
      i = i * 10 + static_cast<std::size_t>(path[k++] - '0');
      if (i >= First + N) return npos_param;
    }
    if (k == 0 || (k > 1 && path[0] == '0') || k >= path.size() || path[k] != '.' || i < First) return npos_param;
    const std::size_t o = Block::find_param(path.substr(k + 1));
    return o == npos_param ? npos_param : (i - First) * Block::param_count + o;
  }
  template <class F>
  static void visit_params(const std::string& prefix, std::size_t base, const init_context& ic, F&& f) {
    for (std::size_t i = 0; i < N; ++i)
      Block::visit_params(prefix + std::to_string(First + i) + ".", base + i * Block::param_count, ic, f);
  }

  template <class F>
  static void forward(const F& f, const typename F::value_type* in, typename F::value_type* out) {
    constexpr std::size_t B = F::batch, S = F::seq, rows = B * S, kb = Block::template kept_count<B, S>;
    const detail::stack_window<F> window(f, param_count);
    for (std::size_t i = 0; i < N; ++i) {
      const auto* x = i == 0 ? in : x_buffer(f, i);
      auto* y = i + 1 == N ? out : x_buffer(f, i + 1);
      F cf = f.child(i * Block::param_count, i * kb, pingpong<B, S>);
      cf.layer = First + i;
      window.params(cf, Block::param_count, i + 1 < N ? cf.poff + Block::param_count : npos_param);
      Block::forward(cf, x, y);
    }
    (void)rows;
  }
  template <class F>
  static void backward(const F& f, const typename F::value_type* in, const typename F::value_type* dout,
                       typename F::value_type* din) {
    using T = typename F::value_type;
    constexpr std::size_t B = F::batch, S = F::seq, rows = B * S, kb = Block::template kept_count<B, S>;
    const detail::stack_window<F> window(f, param_count);
    for (std::size_t k = N; k-- > 0;) {
      const T* g_out = (k + 1 == N) ? dout : f.scratch + ((k + 1) % 2) * rows * in_width;
      const T* x = k == 0 ? in : x_buffer(f, k);
      T* g_in = din;
      if (k > 0) {
        g_in = f.scratch + (k % 2) * rows * in_width;
        ops::zero(f.ctx, view<rows, in_width>(f, g_in));
      }
      F cf = f.child(k * Block::param_count, k * kb, pingpong<B, S>);
      cf.layer = First + k;
      window.params(cf, Block::param_count, k > 0 ? cf.poff - Block::param_count : npos_param);
      const bool grads_windowed = window.grads(cf, Block::param_count);
      Block::backward(cf, x, g_out, g_in);
      if (grads_windowed) window.done(cf, Block::param_count);
      cf.report_grads_final();
    }
  }

 private:
  template <class F>
  static typename F::value_type* x_buffer(const F& f, std::size_t i) {  // input of copy i >= 1
    constexpr std::size_t B = F::batch, S = F::seq;
    return f.kept + N * Block::template kept_count<B, S> + (i - 1) * B * S * in_width;
  }
};

}  // namespace weft

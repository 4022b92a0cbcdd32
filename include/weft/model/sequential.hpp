#pragma once
// ---- sequential: a chain of layers, each feeding the next ----
// Memory: the children's kept activations back to back, then the intermediate outputs
// x_1 .. x_{n-1} (each is the next child's input, needed by its backward). Workspace: two
// ping-pong gradient buffers for the intermediate widths, then the largest child workspace.
#include "weft/core/diagnostics.hpp"  // diag::equal
#include "weft/model/layer.hpp"       // layer, frame
#include "weft/model/layer_check.hpp" // checked_layer_t
#include "weft/ops/fill.hpp"          // zero

#include <algorithm>
#include <array>
#include <cstddef>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>

namespace weft {

namespace detail {
template <std::size_t I, std::size_t Out, std::size_t In>
inline constexpr bool chain_widths_match = (Out == In);
}  // namespace detail

/// `sequential<L0, L1, ...>`: out = L_{n-1}( ... L1(L0(in))). A child that is not a `layer` is
/// diagnosed member by member (layer_check) and the chain goes on without it.
template <class... Ls>
struct sequential {
  static_assert(sizeof...(Ls) > 0, "weft::sequential: no layers. Give sequential<> at least one layer.");
  static constexpr std::size_t n = sizeof...(Ls);
  template <std::size_t I>
  using child = std::tuple_element_t<I, std::tuple<checked_layer_t<Ls>...>>;

  static constexpr std::array<std::size_t, n> in_widths{checked_layer_t<Ls>::in_width...};
  static constexpr std::array<std::size_t, n> out_widths{checked_layer_t<Ls>::out_width...};
  // Children already diagnosed as not being layers: their links are not checked again.
  static constexpr std::array<bool, n> invalid{detail::is_invalid_layer<checked_layer_t<Ls>>...};

 private:
  // One link (I, I+1) per assertion; the condition is the variable template itself, so the compiler
  // prints the layer index and both widths: 'chain_widths_match<0, 16, 12>' evaluates to false.
  template <std::size_t I>
  static consteval bool check_link() {
    if constexpr (!invalid[I] && !invalid[I + 1])
      static_assert(detail::chain_widths_match<I, out_widths[I], in_widths[I + 1]>,
                    "weft::sequential: a layer's output width differs from the next layer's input width. Make "
                    "out_width of layer I equal in_width of layer I+1 (see chain_widths_match<I, out, in>).");
    return true;
  }
  template <std::size_t... I>
  static consteval bool check_chain(std::index_sequence<I...>) {
    return (check_link<I>() && ... && true);
  }
  // Asserted at class scope, so the check runs whenever sequential<...> is instantiated (the
  // initialiser of a static data member alone is instantiated only when the member is used).
  static constexpr bool chain_ok = check_chain(std::make_index_sequence<n - 1>{});
  static_assert(chain_ok, "weft::sequential: the layer widths do not chain (see the assertion above).");

  static constexpr std::array<std::size_t, n> prefix(std::array<std::size_t, n> sizes) {
    std::array<std::size_t, n> o{};
    std::size_t acc = 0;
    for (std::size_t i = 0; i < n; ++i) o[i] = acc, acc += sizes[i];
    return o;
  }

 public:
  static constexpr std::size_t in_width = in_widths[0];
  static constexpr std::size_t out_width = out_widths[n - 1];
  static constexpr std::size_t param_count = (std::size_t{0} + ... + checked_layer_t<Ls>::param_count);
  static constexpr std::array<std::size_t, n> param_offsets = prefix({checked_layer_t<Ls>::param_count...});

  /// Widest intermediate activation (inputs of children 1..n-1).
  static constexpr std::size_t max_inner_width = [] {
    std::size_t m = 0;
    for (std::size_t i = 1; i < n; ++i) m = std::max(m, in_widths[i]);
    return m;
  }();

  template <std::size_t B, std::size_t S>
  static constexpr std::array<std::size_t, n> kept_offsets = prefix({checked_layer_t<Ls>::template kept_count<B, S>...});
  template <std::size_t B, std::size_t S>
  static constexpr std::size_t children_kept = (std::size_t{0} + ... + checked_layer_t<Ls>::template kept_count<B, S>);
  /// Offset (in kept) of x_i, the input of child i, for i >= 1.
  template <std::size_t B, std::size_t S>
  static constexpr std::array<std::size_t, n> x_offsets = [] {
    std::array<std::size_t, n> o{};
    std::size_t acc = children_kept<B, S>;
    for (std::size_t i = 1; i < n; ++i) o[i] = acc, acc += B * S * in_widths[i];
    return o;
  }();
  template <std::size_t B, std::size_t S>
  static constexpr std::size_t kept_count = [] {
    std::size_t acc = children_kept<B, S>;
    for (std::size_t i = 1; i < n; ++i) acc += B * S * in_widths[i];
    return acc;
  }();
  template <std::size_t B, std::size_t S>
  static constexpr std::size_t pingpong = (n > 1) ? 2 * B * S * max_inner_width : 0;
  template <std::size_t B, std::size_t S>
  static constexpr std::size_t scratch_count =
      pingpong<B, S> + std::max({std::size_t{0}, checked_layer_t<Ls>::template scratch_count<B, S>...});

  static constexpr std::size_t find_param(std::string_view path) {
    std::size_t r = npos_param, i = 0;
    ((r == npos_param ? (r = (checked_layer_t<Ls>::find_param(path) == npos_param ? npos_param : checked_layer_t<Ls>::find_param(path) + param_offsets[i]), ++i)
                      : ++i),
     ...);
    return r;
  }
  template <class F>
  static void visit_params(const std::string& prefix, std::size_t base, const init_context& ic, F&& f) {
    std::size_t i = 0;
    ((checked_layer_t<Ls>::visit_params(prefix, base + param_offsets[i++], ic, f)), ...);
  }

  template <class F>
  static void forward(const F& f, const typename F::value_type* in, typename F::value_type* out) {
    forward_impl(f, in, out, std::make_index_sequence<n>{});
  }
  template <class F>
  static void backward(const F& f, const typename F::value_type* in, const typename F::value_type* dout,
                       typename F::value_type* din) {
    backward_impl(f, in, dout, din, std::make_index_sequence<n>{});
  }

 private:
  template <class F>
  static F child_frame(const F& f, std::size_t i) {
    return f.child(param_offsets[i], kept_offsets<F::batch, F::seq>[i], pingpong<F::batch, F::seq>);
  }

  template <class F, std::size_t... I>
  static void forward_impl(const F& f, const typename F::value_type* in, typename F::value_type* out,
                           std::index_sequence<I...>) {
    constexpr std::size_t B = F::batch, S = F::seq;
    auto input = [&](std::size_t i) -> const typename F::value_type* { return i == 0 ? in : f.kept + x_offsets<B, S>[i]; };
    auto output = [&](std::size_t i) { return i + 1 == n ? out : f.kept + x_offsets<B, S>[i + 1]; };
    (child<I>::forward(child_frame(f, I), input(I), output(I)), ...);
  }

  template <class F, std::size_t K>
  static void backward_one(const F& f, const typename F::value_type* in, const typename F::value_type* dout,
                           typename F::value_type* din) {
    constexpr std::size_t B = F::batch, S = F::seq, rows = B * S;
    using T = typename F::value_type;
    // Gradient w.r.t. this child's output: the caller's dout for the last child, else ping-pong (K+1)%2.
    const T* g_out = (K + 1 == n) ? dout : f.scratch + ((K + 1) % 2) * rows * max_inner_width;
    const T* x_in = (K == 0) ? in : f.kept + x_offsets<B, S>[K];
    T* g_in = din;
    if constexpr (K > 0) {
      g_in = f.scratch + (K % 2) * rows * max_inner_width;
      ops::zero(f.ctx, view<rows, in_widths[K]>(f, g_in));
    }
    const F cf = child_frame(f, K);
    child<K>::backward(cf, x_in, g_out, g_in);
    cf.report_grads_final();  // children run last-to-first: everything from child K on is done
  }

  template <class F, std::size_t... I>
  static void backward_impl(const F& f, const typename F::value_type* in, const typename F::value_type* dout,
                            typename F::value_type* din, std::index_sequence<I...>) {
    (backward_one<F, n - 1 - I>(f, in, dout, din), ...);  // last child first
  }
};

}  // namespace weft

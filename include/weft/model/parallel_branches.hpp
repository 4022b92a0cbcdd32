#pragma once
// ---- parallel branches: several layers read the same input, their outputs are summed ----
// branch_sum<F0, F1, ...>                  out = F0(x) + F1(x) + ...      (the primitive)
// parallel_branches<Norm, F0, F1, ...>     out = x + F0(n(x)) + F1(n(x)) + ...   (one norm, shared)
// parallel_block<Norm, Attn, Mlp>          out = x + Attn(n(x)) + Mlp(n(x))      (GPT-J, GPT-NeoX,
//                                          PaLM's "parallel" formulation; names ln_1, attn, mlp)
// Memory of branch_sum: the children's kept activations back to back (the input x is the
// caller's, alive through backward, so nothing else is kept); workspace: one output-sized
// buffer for branches 1..n-1 (branch 0 writes the output directly), then the largest child
// workspace. Backward: every branch gets the same dout and adds its input gradient into din
// (backward accumulates), last branch first, each reporting its gradients final as it ends.
// Under tensor parallelism each branch is mapped on its own (parallel/tensor_parallel.hpp): an
// attention or MLP branch is a region that ends in its own reduction, so the sum is of whole
// rows (of the rank's sequence slice with sequence parallelism).
#include "weft/core/diagnostics.hpp"  // diag::equal
#include "weft/model/layer.hpp"       // layer, frame, npos_param
#include "weft/model/layer_check.hpp" // checked_layer_t
#include "weft/model/named.hpp"       // named
#include "weft/model/residual.hpp"    // residual
#include "weft/model/sequential.hpp"  // sequential
#include "weft/ops/accumulate.hpp"    // accumulate

#include <algorithm>
#include <array>
#include <cstddef>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>

namespace weft {

namespace detail {
// Branch I's widths against branch 0's, printed with the numbers when they differ.
template <std::size_t I, std::size_t In0, std::size_t In, std::size_t Out0, std::size_t Out>
inline constexpr bool branch_widths_match = (In0 == In) && (Out0 == Out);
}  // namespace detail

/// `branch_sum<F0, F1, ...>`: out = F0(in) + F1(in) + ...; every branch reads the same input
/// and has the same output width.
template <class... Fs>
struct branch_sum {
  static_assert(sizeof...(Fs) > 0, "weft::branch_sum: no branches. Give branch_sum<> at least one layer.");
  static constexpr std::size_t n = sizeof...(Fs);
  template <std::size_t I>
  using child = std::tuple_element_t<I, std::tuple<checked_layer_t<Fs>...>>;

  static constexpr std::array<std::size_t, n> in_widths{checked_layer_t<Fs>::in_width...};
  static constexpr std::array<std::size_t, n> out_widths{checked_layer_t<Fs>::out_width...};

 private:
  template <std::size_t I>
  static consteval bool check_branch() {
    static_assert(detail::branch_widths_match<I, in_widths[0], in_widths[I], out_widths[0], out_widths[I]>,
                  "weft::branch_sum: a branch's input or output width differs from the first branch's. Give every "
                  "branch the same in_width and out_width (see branch_widths_match<I, in0, in, out0, out>).");
    return true;
  }
  template <std::size_t... I>
  static consteval bool check_all(std::index_sequence<I...>) {
    return (check_branch<I>() && ... && true);
  }
  static constexpr bool widths_ok = check_all(std::make_index_sequence<n>{});
  static_assert(widths_ok, "weft::branch_sum: the branch widths differ (see the assertion above).");

  static constexpr std::array<std::size_t, n> prefix(std::array<std::size_t, n> sizes) {
    std::array<std::size_t, n> o{};
    std::size_t acc = 0;
    for (std::size_t i = 0; i < n; ++i) o[i] = acc, acc += sizes[i];
    return o;
  }

 public:
  static constexpr std::size_t in_width = in_widths[0];
  static constexpr std::size_t out_width = out_widths[0];
  static constexpr std::size_t param_count = (std::size_t{0} + ... + checked_layer_t<Fs>::param_count);
  static constexpr std::array<std::size_t, n> param_offsets = prefix({checked_layer_t<Fs>::param_count...});

  template <std::size_t B, std::size_t S>
  static constexpr std::array<std::size_t, n> kept_offsets = prefix({checked_layer_t<Fs>::template kept_count<B, S>...});
  template <std::size_t B, std::size_t S>
  static constexpr std::size_t kept_count = (std::size_t{0} + ... + checked_layer_t<Fs>::template kept_count<B, S>);
  /// The output of branches 1..n-1 before it is added, (batch, seq, out_width).
  template <std::size_t B, std::size_t S>
  static constexpr std::size_t partial = (n > 1) ? B * S * out_width : 0;
  template <std::size_t B, std::size_t S>
  static constexpr std::size_t scratch_count =
      partial<B, S> + std::max({std::size_t{0}, checked_layer_t<Fs>::template scratch_count<B, S>...});

  static constexpr std::size_t find_param(std::string_view path) {
    std::size_t r = npos_param, i = 0;
    ((r == npos_param ? (r = (checked_layer_t<Fs>::find_param(path) == npos_param
                                  ? npos_param
                                  : checked_layer_t<Fs>::find_param(path) + param_offsets[i]),
                         ++i)
                      : ++i),
     ...);
    return r;
  }
  template <class F>
  static void visit_params(const std::string& prefix, std::size_t base, const init_context& ic, F&& f) {
    std::size_t i = 0;
    ((checked_layer_t<Fs>::visit_params(prefix, base + param_offsets[i++], ic, f)), ...);
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
    return f.child(param_offsets[i], kept_offsets<F::batch, F::seq>[i], partial<F::batch, F::seq>);
  }
  template <class F, std::size_t I>
  static void forward_one(const F& f, const typename F::value_type* in, typename F::value_type* out) {
    if constexpr (I == 0) {
      child<0>::forward(child_frame(f, 0), in, out);  // (rows, out_width)
    } else {
      auto* part = f.scratch;  // (rows, out_width)
      child<I>::forward(child_frame(f, I), in, part);
      ops::accumulate(f.ctx, view<F::rows, out_width>(f, out), view<F::rows, out_width>(f, part));  // out += part
    }
  }
  template <class F, std::size_t... I>
  static void forward_impl(const F& f, const typename F::value_type* in, typename F::value_type* out,
                           std::index_sequence<I...>) {
    (forward_one<F, I>(f, in, out), ...);
  }
  template <class F, std::size_t K>
  static void backward_one(const F& f, const typename F::value_type* in, const typename F::value_type* dout,
                           typename F::value_type* din) {
    const F cf = child_frame(f, K);
    child<K>::backward(cf, in, dout, din);  // d out / d branch = 1: the same dout; din accumulates
    cf.report_grads_final();                // branches run last-to-first: from branch K on, done
  }
  template <class F, std::size_t... I>
  static void backward_impl(const F& f, const typename F::value_type* in, const typename F::value_type* dout,
                            typename F::value_type* din, std::index_sequence<I...>) {
    (backward_one<F, n - 1 - I>(f, in, dout, din), ...);
  }
};

/// out = x + F0(Norm(x)) + F1(Norm(x)) + ...: one norm shared by parallel branches, one residual.
/// Parameter names are the children's (name them with named<>: `named<"ln", layernorm<C>>`).
template <class Norm, class... Branches>
using parallel_branches = residual<sequential<Norm, branch_sum<Branches...>>>;

/// The parallel transformer block (GPT-J, GPT-NeoX, PaLM): x + Attn(Norm(x)) + Mlp(Norm(x)).
/// Parameter names: ln_1, attn, mlp.
template <class Norm, class Attn, class Mlp>
using parallel_block = parallel_branches<named<"ln_1", Norm>, named<"attn", Attn>, named<"mlp", Mlp>>;

}  // namespace weft

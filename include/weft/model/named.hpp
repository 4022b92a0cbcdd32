#pragma once
// ---- named: gives a layer a path segment ("attn", "ln_1") for its parameters ----
#include "weft/core/fixed_string.hpp"  // fixed_string
#include "weft/model/layer.hpp"        // layer, npos_param
#include "weft/model/layer_check.hpp"  // checked_layer_t

#include <cstddef>
#include <string>
#include <string_view>

namespace weft {

/// `named<"ln_1", layernorm<768>>`: the same layer, its parameters called "ln_1.weight", ...
template <fixed_string Name, class Layer>
struct named {
  using L = checked_layer_t<Layer>;  // Layer, or a stand-in after its diagnostic
  using inner = L;
  static constexpr auto name = Name;
  using weft_named_tag = void;  // recognised by type transforms (nvcc cannot deduce fixed_string<N> in a specialisation)
  static constexpr std::size_t in_width = L::in_width;
  static constexpr std::size_t out_width = L::out_width;
  static constexpr std::size_t param_count = L::param_count;
  template <std::size_t B, std::size_t S>
  static constexpr std::size_t kept_count = L::template kept_count<B, S>;
  template <std::size_t B, std::size_t S>
  static constexpr std::size_t scratch_count = L::template scratch_count<B, S>;

  static constexpr std::size_t find_param(std::string_view path) {
    const std::string_view n = Name.view();
    if (path.size() > n.size() && path.substr(0, n.size()) == n && path[n.size()] == '.')
      return L::find_param(path.substr(n.size() + 1));
    return npos_param;
  }
  template <class F>
  static void visit_params(const std::string& prefix, std::size_t base, const init_context& ic, F&& f) {
    L::visit_params(prefix + std::string(Name.view()) + ".", base, ic, f);
  }
  template <class F>
  static void forward(const F& f, const typename F::value_type* in, typename F::value_type* out) {
    L::forward(f, in, out);
  }
  template <class F>
  static void backward(const F& f, const typename F::value_type* in, const typename F::value_type* dout,
                       typename F::value_type* din) {
    L::backward(f, in, dout, din);
  }
};

}  // namespace weft

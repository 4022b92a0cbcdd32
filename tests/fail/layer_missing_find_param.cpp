// expect: weft::layer: the layer has no constexpr find_param
#include "weft/model/layer.hpp"
#include "weft/model/named.hpp"
// A user layer that does not derive from leaf_layer/stateless_layer and lacks a member they give.
struct my_layer {
  static constexpr std::size_t in_width = 8;
  static constexpr std::size_t out_width = 8;
  static constexpr std::size_t param_count = 0;
  template <std::size_t B, std::size_t S> static constexpr std::size_t kept_count = 0;
  template <std::size_t B, std::size_t S> static constexpr std::size_t scratch_count = 0;
  template <class F> static void visit_params(const std::string&, std::size_t, const weft::init_context&, F&&) {}
  template <class F> static void forward(const F&, const typename F::value_type*, typename F::value_type*) {}
  template <class F> static void backward(const F&, const typename F::value_type*, const typename F::value_type*, typename F::value_type*) {}
};
using model = weft::named<"x", my_layer>;
static_assert(model::in_width == 8);

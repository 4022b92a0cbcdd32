// expect: weft::layer: the layer has no kept_count
#include "weft/model/layer.hpp"
#include "weft/model/linear.hpp"
#include "weft/model/sequential.hpp"
// A user layer with one member of the contract left out; the model around it is otherwise right.
struct my_layer : weft::stateless_layer {
  static constexpr std::size_t in_width = 8;
  static constexpr std::size_t out_width = 8;
  template <std::size_t B, std::size_t S> static constexpr std::size_t scratch_count = 0;
  template <class F> static void forward(const F&, const typename F::value_type*, typename F::value_type*) {}
  template <class F> static void backward(const F&, const typename F::value_type*, const typename F::value_type*, typename F::value_type*) {}
};
using model = weft::sequential<weft::linear<8, 8>, my_layer, weft::linear<8, 8>>;
static_assert(model::param_count > 0);

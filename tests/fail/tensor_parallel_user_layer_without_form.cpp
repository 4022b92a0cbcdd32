// expect: weft::tp_shard: no tensor-parallel form is known for this layer
#include "weft/model/layer.hpp"
#include "weft/model/linear.hpp"
#include "weft/model/sequential.hpp"
#include "weft/parallel/tensor_parallel.hpp"
// A user's elementwise layer inside an MLP region, with no tp_shard specialisation: one message
// (no second one about the region's widths, which the missing form would otherwise cause).
template <std::size_t C>
struct my_act : weft::stateless_layer {
  static constexpr std::size_t in_width = C, out_width = C;
  template <std::size_t B, std::size_t S> static constexpr std::size_t kept_count = 0;
  template <std::size_t B, std::size_t S> static constexpr std::size_t scratch_count = 0;
  template <class F> static void forward(const F&, const typename F::value_type*, typename F::value_type*) {}
  template <class F> static void backward(const F&, const typename F::value_type*, const typename F::value_type*, typename F::value_type*) {}
};
using mlp = weft::sequential<weft::linear<8, 32, weft::role::column>, my_act<32>, weft::linear<32, 8, weft::role::row>>;
static_assert(weft::tp_shard_t<mlp, 2>::param_count > 0);

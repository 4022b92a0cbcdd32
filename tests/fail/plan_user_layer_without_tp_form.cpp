// expect: weft::tp_shard: no tensor-parallel form is known for this layer
// Plan-only use (no step built): a user's leaf layer with no tp_shard specialisation under tp 2.
// model_partition alone would count its gain replicated on every rank and price a model no step
// can run; the plan names the sharded model, so the missing form is reported here.
#include "weft/model.hpp"
#include "weft/parallel/plan.hpp"
using namespace weft;
template <std::size_t C>
struct channel_scale : leaf_layer<param_list<param<"gain", shape<axis<"width", C>>, role::replicated, init::ones>>> {
  static constexpr std::size_t in_width = C, out_width = C;
  template <std::size_t B, std::size_t S> static constexpr std::size_t kept_count = 0;
  template <std::size_t B, std::size_t S> static constexpr std::size_t scratch_count = 0;
  template <class F> static void forward(const F&, const typename F::value_type*, typename F::value_type*) {}
  template <class F>
  static void backward(const F&, const typename F::value_type*, const typename F::value_type*, typename F::value_type*) {}
};
struct my_model : sequential<named<"embed", token_embedding<32, 16>>, named<"scale", channel_scale<16>>,
                             named<"head", lm_head<32, 16, untied>>> {
  static constexpr std::size_t vocab_size = 32, context_length = 8, depth = 1, width = 16, heads = 4,
                               lookup_param_count = 32 * 16;
};
using tp2 = strategy<mesh<axis<"dp">, axis<"tp", 2>>, tensor_parallel<"tp">>;
constexpr std::size_t n = plan<my_model, batch<micro<2>, seq<8>>, tp2>::memory_per_rank;

// expect: weft::plan: pipeline parallelism needs the model.s blocks as one repeat<N, Block> inside a top-level sequential
#include "weft/model/lm_head.hpp"
#include "weft/model/sequential.hpp"
#include "weft/model/token_embedding.hpp"
#include "weft/parallel/plan.hpp"
using namespace weft;
struct bigram : sequential<token_embedding<64, 16>, lm_head<64, 16>> {  // no repeat<> of blocks
  static constexpr std::size_t vocab_size = 64, context_length = 16, depth = 2, width = 16, heads = 4, lookup_param_count = 64 * 16;
};
static_assert(plan<bigram, batch<micro<1>, seq<16>>, strategy<mesh<axis<"dp">, axis<"pp", 2>>, pipeline<"pp", gpipe, microbatches<2>>>>::memory_per_rank > 0);

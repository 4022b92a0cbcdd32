/*
 * bench_auto_strategy — the compile time of auto_strategy's search over a realistic space.
 * Compiling this file is the benchmark (bench_auto_strategy.sh times it); running it prints
 * what the compiler chose. Two searches: LLaMA-2 70B on 8 DGX H100 (64 GPUs), global batch
 * 1024 x 4096; GPT-3 175B on 128 DGX A100 (1024 GPUs), global batch 1536 x 2048 — every tp,
 * pp, dp, ZeRO stage, sequence parallelism, schedule (interleaving V = 2..8), micro-batch
 * (1..8) and recompute policy.
 */
#include <weft/model/gpt.hpp>
#include <weft/model/llama.hpp>
#include <weft/planner/auto_strategy.hpp>

#include <cstdio>

using namespace weft;

using llama2_70b = llama<llama_config<vocab<32000>, context<4096>, width<8192>, heads<64>, kv_heads<8>, depth<80>, ffn<28672>>>;
using gpt3_175b = gpt<gpt_config<vocab<51200>, context<2048>, width<12288>, heads<96>, depth<96>>>;

using pick_70b = auto_strategy<llama2_70b, global_batch<1024, 4096>, planner::h100_nodes<8>>;
using pick_175b = auto_strategy<gpt3_175b, global_batch<1536, 2048>, planner::a100_nodes<128>>;

// The winners are types: their plans check and price them again.
static_assert(pick_70b::plan_type::memory_per_rank == pick_70b::best.cost.memory.total());
static_assert(pick_175b::plan_type::memory_per_rank == pick_175b::best.cost.memory.total());

template <class Pick>
void show(const char* name) {
  constexpr auto s = Pick::chosen;
  std::printf("%s: tp %zu%s pp %zu (%s, V=%zu) dp %zu zero %zu micro %zu x %zu recompute %s: %.3f s/step, %.1f GB/GPU; "
              "%zu strategies priced at compile time\n",
              name, s.tp, s.sequence_parallel ? "+sp" : "", s.pp, planner::schedule_name(s.schedule), s.chunks, s.dp, s.zero,
              s.micro, s.microbatches, planner::recompute_name(s.recompute), Pick::best.cost.step_seconds,
              Pick::best.cost.memory.total() / 1e9, Pick::result.evaluated);
}

int main() {
  show<pick_70b>("llama2-70b on 64 H100");
  show<pick_175b>("gpt3-175b on 1024 A100");
}

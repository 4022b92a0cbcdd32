// Every matrix product of a GPT and a LLaMA step gets operands aligned to at least 128 bytes
// in the plan's arena (f32 and bf16). A GPU's matrix library needs 16 (cuBLASLt refuses a bf16
// product on 2-byte-aligned buffers, and fails an f32 one at launch; seen on an H200 on
// 2026-12-04 when a norm's kept block of 2n + 1 elements left every later activation at an odd
// element). A probe context (a host context whose matmul bodies record their operands'
// alignment and compute nothing) runs the model's forward and backward over a real arena.
#include <weft/weft.hpp>

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <new>

using namespace weft;

namespace probe {
struct probe_context : host_context {};

inline std::size_t smallest = 4096;
inline std::size_t products = 0;

inline std::size_t alignment(const void* p) {
  if (p == nullptr) return 4096;
  const auto a = reinterpret_cast<std::uintptr_t>(p);
  std::size_t r = 1;
  while (r < 4096 && a % (r * 2) == 0) r *= 2;
  return r;
}
template <class V>
void record(const V& v) {
  if constexpr (requires { v.data(); }) smallest = std::min(smallest, alignment(v.data()));
}
// The view forms of the products (what layers call): found for probe_context by argument-
// dependent lookup, an exact match where the host bodies take host_context by reference.
template <std::size_t N, std::size_t C, std::size_t OC, class O, class I, class W, class B>
void op_impl(ops::matmul_forward_op<N, C, OC>, const probe_context&, O out, I inp, W w, B bias) {
  record(out), record(inp), record(w), record(bias), ++products;
}
template <std::size_t N, std::size_t C, std::size_t OC, class DI, class DW, class DB, class DO, class I, class W>
void op_impl(ops::matmul_backward_op<N, C, OC>, const probe_context&, DI dinp, DW dw, DB dbias, DO dout, I inp, W w) {
  record(dinp), record(dw), record(dbias), record(dout), record(inp), record(w), ++products;
}
}  // namespace probe

namespace {
template <class Plan>
std::size_t smallest_operand_alignment() {
  using model = typename Plan::model;
  using T = typename Plan::value_type;
  constexpr std::size_t B = Plan::B, S = Plan::S;
  auto* arena = static_cast<std::byte*>(::operator new[](Plan::bytes_per_rank, std::align_val_t{256}));
  std::memset(arena, 0, Plan::bytes_per_rank);
  auto at = [&]<class U = T>(typename Plan::section_id s) { return reinterpret_cast<U*>(arena + Plan::offsets[s]); };
  frame<T, B, S, model, probe::probe_context> f;
  f.params = f.root_params = at(Plan::params);
  f.grads = f.root_grads = at(Plan::grads);
  f.kept = at(Plan::kept);
  f.scratch = at(Plan::scratch);
  f.tokens = at.template operator()<std::int32_t>(Plan::tokens);
  probe::smallest = 4096, probe::products = 0;
  model::forward(f, nullptr, at(Plan::logits));
  model::backward(f, nullptr, at(Plan::logits), nullptr);
  ::operator delete[](arena, std::align_val_t{256});
  return probe::products > 0 ? probe::smallest : 0;
}

using gpt_small = gpt<gpt_config<vocab<256>, context<64>, width<128>, heads<4>, depth<2>>>;
using llama_small = llama<llama_config<vocab<256>, context<128>, width<192>, heads<6>, kv_heads<2>, depth<2>>>;
}  // namespace

TEST_CASE("matrix-product operands are aligned to 128 bytes in GPT and LLaMA arenas", "[model][alignment]") {
  CHECK(smallest_operand_alignment<plan<gpt_small, batch<micro<16>, seq<64>>>>() >= 128);
  CHECK(smallest_operand_alignment<plan<gpt_small, batch<micro<16>, seq<64>>, precision<bf16, f32>>>() >= 128);
  CHECK(smallest_operand_alignment<plan<llama_small, batch<micro<8>, seq<128>>>>() >= 128);
  CHECK(smallest_operand_alignment<plan<llama_small, batch<micro<8>, seq<128>>, precision<bf16, f32>>>() >= 128);
}

TEST_CASE("a norm's kept block is a whole number of 64-element granules", "[model][alignment]") {
  STATIC_REQUIRE(norm_stat_slots<1> == 64);
  STATIC_REQUIRE(norm_stat_slots<32> == 128);
  STATIC_REQUIRE(layernorm<128>::kept_count<16, 64> % norm_stat_granule == 0);
  STATIC_REQUIRE(rmsnorm<192>::kept_count<8, 128> % norm_stat_granule == 0);
}

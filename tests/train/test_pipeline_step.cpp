// Pipeline stages as types (names, widths, the cut of the block stack, the tied copy), and the
// pipeline executor on one process (P = 1 over single_world) against training_step. The
// multi-process equivalence runs under mpirun: tests/mpi/pp_equivalence.cpp.
#include <catch2/catch.hpp>

#include <weft/comm/single.hpp>
#include <weft/model.hpp>
#include <weft/parallel.hpp>
#include <weft/parallel/pipeline_stage.hpp>
#include <weft/exec/pipeline_step.hpp>
#include <weft/exec/training_step.hpp>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <string>
#include <vector>

using namespace weft;

namespace {
using gpt_t = gpt<gpt_config<vocab<32>, context<8>, width<16>, heads<2>, depth<4>>>;
using llama_t = llama<llama_config<vocab<32>, context<8>, width<16>, heads<4>, kv_heads<2>, depth<4>>>;

template <class L>
std::vector<param_info> infos_of() {
  std::vector<param_info> v;
  L::visit_params("", 0, init_context{4}, [&](const param_info& p) { v.push_back(p); });
  return v;
}

// name -> how many virtual stages hold it, over the P·V stages of the model.
template <class Model, std::size_t P, std::size_t V>
std::map<std::string, int> names_over_stages() {
  std::map<std::string, int> seen;
  [&]<std::size_t... I>(std::index_sequence<I...>) {
    ((
         [&] {
           using L = pipeline_stage_t<Model, P, I % P, V, I / P>;
           for (const auto& p : infos_of<L>()) {
             ++seen[p.name];
             CHECK(L::find_param(p.name) == p.offset);  // global names are found where visited
           }
         }()),
     ...);
  }(std::make_index_sequence<P * V>{});
  return seen;
}
}  // namespace

TEST_CASE("repeat numbers its copies from First", "[model][repeat]") {
  using r = named<"h", repeat<2, layernorm<4>, 5>>;
  const auto v = infos_of<r>();
  REQUIRE(v.size() == 4);
  CHECK(v[0].name == "h.5.weight");
  CHECK(v[3].name == "h.6.bias");
  CHECK(r::find_param("h.6.weight") == 8);
  CHECK(r::find_param("h.4.weight") == npos_param);  // below First
  CHECK(r::find_param("h.7.weight") == npos_param);  // past First + N
  CHECK(repeat<2, layernorm<4>>::find_param("1.bias") == 12);
}

TEST_CASE("pipeline stages cut the block stack and keep global names", "[parallel][pipeline]") {
  using s0 = pipeline_stage<gpt_t, 2, 0>;
  using s1 = pipeline_stage<gpt_t, 2, 1>;
  STATIC_REQUIRE(s0::type::in_width == 0);  // token ids
  STATIC_REQUIRE(s0::type::out_width == 16);
  STATIC_REQUIRE(s1::type::in_width == 16);
  STATIC_REQUIRE(s1::type::out_width == 32);  // logits
  STATIC_REQUIRE(s0::first_block == 0 && s0::blocks == 2 && s1::first_block == 2);
  STATIC_REQUIRE(s1::carries_tied && !s0::carries_tied);
  STATIC_REQUIRE(s0::type::find_param("h.1.attn.c_attn.weight") != npos_param);
  STATIC_REQUIRE(s0::type::find_param("h.2.attn.c_attn.weight") == npos_param);
  STATIC_REQUIRE(s1::type::find_param("wte.weight") == 0);  // the tied copy, first in the block
  STATIC_REQUIRE(s0::tied_count == 32 * 16 && s1::tied_count == 32 * 16 && s1::tied_offset == 0);
  // The whole model on one stage: the same block as the model's.
  STATIC_REQUIRE(pipeline_stage_t<gpt_t, 1, 0>::param_count == gpt_t::param_count);
  STATIC_REQUIRE(!pipeline_stage<gpt_t, 1, 0>::in_embedding_group);

  SECTION("gpt over 2 stages x 2 chunks: every parameter once, wte twice") {
    const auto seen = names_over_stages<gpt_t, 2, 2>();
    const auto whole = infos_of<gpt_t>();
    CHECK(seen.size() == whole.size());
    for (const auto& p : whole) CHECK(seen.at(p.name) == (p.name == "wte.weight" ? 2 : 1));
    using c1 = pipeline_stage<gpt_t, 2, 0, 2, 1>;  // virtual stage 2 holds block 2 only
    STATIC_REQUIRE(c1::virtual_stage == 2 && c1::first_block == 2 && c1::blocks == 1);
    STATIC_REQUIRE(c1::type::in_width == 16 && c1::type::out_width == 16);
  }
  SECTION("llama (untied head): every parameter exactly once") {
    const auto seen = names_over_stages<llama_t, 4, 1>();
    const auto whole = infos_of<llama_t>();
    CHECK(seen.size() == whole.size());
    for (const auto& p : whole) CHECK(seen.at(p.name) == 1);
    STATIC_REQUIRE(!pipeline_stage<llama_t, 4, 3>::carries_tied);
    STATIC_REQUIRE(!pipeline_stage<llama_t, 4, 0>::in_embedding_group);
  }
}

TEMPLATE_TEST_CASE("pipeline_step on one stage matches training_step", "[train][pipeline]", gpipe, one_f_one_b) {
  using P = plan<gpt_t, batch<micro<2>, seq<8>>, precision<double>>;
  constexpr std::size_t M = 3;
  single_world world;
  train_options o;
  o.optimizer.lr = 1e-2f;
  o.grad_clip = 0.5f;
  pipeline_step<P, 1, TestType, M, single_world> pipe(world, o);
  train_options ro = o;
  ro.grad_accum = M;
  training_step<P> ref(ro);
  CHECK(pipe.layout().slots == (std::is_same_v<TestType, gpipe> ? M : 1));  // 1F1B on one stage holds one set
  REQUIRE(pipe.params().size() == ref.params().size());

  for (std::size_t s = 0; s < 3; ++s) {
    auto fill = [&] {  // micro-batch i of step s, counted by each step separately
      return [&, i = std::size_t{0}](auto tok, auto tgt) mutable {
        for (std::size_t r = 0; r < P::rows; ++r) {
          tok[r] = static_cast<std::int32_t>((s * 7 + i * 5 + r * 3) % 32);
          tgt[r] = static_cast<std::int32_t>((s * 11 + i * 3 + r * 5 + 1) % 32);
        }
        ++i;
      };
    };
    const auto a = pipe.step(fill());
    const auto b = ref.step(fill());
    CHECK(a.loss == Approx(b.loss).epsilon(1e-12));
    CHECK(a.grad_norm == Approx(b.grad_norm).epsilon(1e-12));
  }
  double worst = 0;
  for (std::size_t i = 0; i < pipe.params().size(); ++i)
    worst = std::max(worst, std::abs(pipe.params()[i] - ref.params()[i]));
  CHECK(worst < 1e-12);
}

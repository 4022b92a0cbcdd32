// torch's nn.Embedding padding_idx in weft (docs/checkpoints.md, "The transformers tier"): the
// embedding row of training_step::set_padding_token's id gets no gradient from its lookups (a
// tied head still adds its own), and load_hf_weights reads a config.json's pad_token_id (LLaMA,
// Mistral, Qwen, Mixtral, Qwen3-MoE and Gemma 3 build their embedding with it), save_hf_weights
// writes it back, and a pad_token_id that is not a token id of the model is refused.
#include <weft/exec/training_step.hpp>
#include <weft/io/hf_llama.hpp>
#include <weft/model/llama.hpp>
#include <weft/parallel/plan.hpp>

#include "../common/temp_dir.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

using namespace weft;

template <class... Extra>
using pad_model = llama<llama_config<vocab<16>, context<4>, width<8>, heads<2>, kv_heads<1>, depth<1>, ffn<12>, Extra...>>;
template <class M>
using pad_step = training_step<plan<M, batch<micro<2>, seq<4>>, precision<double>>>;

constexpr std::int32_t pad = 3;

// The gradients of one micro-batch whose tokens hold `pad` at three places, with the step's padding token set to `id`.
template <class M>
std::vector<double> grads_with(std::int64_t id) {
  train_options o;
  o.seed = 5;
  pad_step<M> st(o);
  st.set_padding_token(id);
  const std::int32_t tokens[8] = {pad, 1, 2, pad, 4, pad, 6, 7};
  for (std::size_t i = 0; i < 8; ++i) st.tokens()[i] = tokens[i], st.targets()[i] = static_cast<std::int32_t>((i + 1) % 16);
  std::fill(st.grads().begin(), st.grads().end(), 0.0);
  (void)st.accumulate(1.0 / 8);
  return {st.grads().begin(), st.grads().end()};
}

void write_config_with_pad(const std::filesystem::path& file, const std::string& pad_json) {
  std::ifstream in(file);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto brace = text.find('{');
  REQUIRE(brace != std::string::npos);
  text.insert(brace + 1, "\n  \"pad_token_id\": " + pad_json + ",");
  std::ofstream(file, std::ios::trunc) << text;
}

}  // namespace

TEST_CASE("set_padding_token: the pad row gets no gradient from its lookups, nothing else changes", "[io][hf][padding]") {
  using M = pad_model<>;
  const std::size_t embed = M::find_param("embed.weight");
  REQUIRE(embed != npos_param);
  constexpr std::size_t C = 8;
  const auto plain = grads_with<M>(-1), padded = grads_with<M>(pad);
  REQUIRE(plain.size() == padded.size());
  double plain_row = 0;
  for (std::size_t c = 0; c < C; ++c) {
    plain_row += std::abs(plain[embed + pad * C + c]);
    CHECK(padded[embed + pad * C + c] == 0.0);  // untied: the lookups were its only gradient
  }
  CHECK(plain_row > 0);  // without the padding token the row does get one
  std::size_t differing = 0;
  for (std::size_t i = 0; i < plain.size(); ++i)
    if (plain[i] != padded[i]) {
      ++differing;
      CHECK((i >= embed + pad * C && i < embed + (pad + 1) * C));
    }
  CHECK(differing == C);
}

TEST_CASE("set_padding_token with a tied head: the head's gradient of the pad row stays", "[io][hf][padding]") {
  using M = pad_model<tie_word_embeddings<>>;
  const std::size_t embed = M::find_param("embed.weight");
  constexpr std::size_t C = 8;
  const auto plain = grads_with<M>(-1), padded = grads_with<M>(pad);
  double head_part = 0, lookup_part = 0;
  for (std::size_t c = 0; c < C; ++c) {
    head_part += std::abs(padded[embed + pad * C + c]);
    lookup_part += std::abs(plain[embed + pad * C + c] - padded[embed + pad * C + c]);
  }
  CHECK(head_part > 0);
  CHECK(lookup_part > 0);
  for (std::size_t i = 0; i < plain.size(); ++i)
    if (i < embed + pad * C || i >= embed + (pad + 1) * C) CHECK(plain[i] == padded[i]);
}

TEST_CASE("set_padding_token refuses an id outside the vocabulary", "[io][hf][padding]") {
  pad_step<pad_model<>> st;
  CHECK_THROWS_WITH(st.set_padding_token(16), Catch::Contains("outside the vocabulary of 16"));
  CHECK_THROWS_AS(st.set_padding_token(-2), std::invalid_argument);
  st.set_padding_token(15);
  CHECK(st.padding_token() == 15);
  st.set_padding_token(-1);
  CHECK(st.padding_token() == -1);
}

TEST_CASE("load_hf_weights reads pad_token_id, save_hf_weights writes it, a bad one is refused", "[io][hf][padding]") {
  using M = pad_model<>;
  weft_test::temp_dir dir;
  pad_step<M> a;
  CHECK(a.padding_token() == -1);
  save_hf_weights(a, dir / "hf");
  {
    std::ifstream in(dir / "hf" / "config.json");
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    CHECK(text.find("pad_token_id") == std::string::npos);  // none set: none written
  }
  pad_step<M> b;
  load_hf_weights(b, dir / "hf");
  CHECK(b.padding_token() == -1);

  write_config_with_pad(dir / "hf" / "config.json", "3");
  load_hf_weights(b, dir / "hf");
  CHECK(b.padding_token() == 3);
  save_hf_weights(b, dir / "again");
  pad_step<M> c;
  load_hf_weights(c, dir / "again");
  CHECK(c.padding_token() == 3);  // written back

  save_hf_weights(a, dir / "null");
  write_config_with_pad(dir / "null" / "config.json", "null");
  load_hf_weights(c, dir / "null");
  CHECK(c.padding_token() == -1);  // null: none (the loaded model's, not the step's earlier one)

  save_hf_weights(a, dir / "big");
  write_config_with_pad(dir / "big" / "config.json", "16");
  CHECK_THROWS_WITH(load_hf_weights(c, dir / "big"), Catch::Contains("pad_token_id is 16, outside this model's vocabulary of 16"));
  save_hf_weights(a, dir / "text");
  write_config_with_pad(dir / "text" / "config.json", "\"<pad>\"");
  CHECK_THROWS_WITH(load_hf_weights(c, dir / "text"), Catch::Contains("not a token id"));
}

// A Gemma-shaped model composed from weft's layers (no preset): token embedding scaled by
// sqrt(width), pre-norm blocks of multi-query attention with a head size of its own and a GeGLU
// MLP, a head tied to the embedding. Gemma 2B's parameter count; training with the probabilities
// and with flash_attention agree; the structure text names the new layers.
#include <weft/model.hpp>
#include <weft/model/structure.hpp>
#include <weft/parallel/plan.hpp>
#include <weft/parallel/strategy.hpp>
#include <weft/exec/training_step.hpp>

#include <catch2/catch.hpp>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>

using namespace weft;

// example-begin gemma-like
template <std::size_t V, std::size_t Ctx, std::size_t C, std::size_t H, std::size_t KVH, std::size_t D, std::size_t L,
          std::size_t F>
struct gemma_like
    : sequential<named<"embed", token_embedding<V, C>>, embedding_scale<C>,
                 named<"layers", repeat<L, block<rmsnorm<C>, attention<C, H, KVH, rope, false, export_layout::as_is, 0, D>,
                                                 rmsnorm<C>, geglu_mlp<C, F>>>>,
                 named<"norm", rmsnorm<C>>, lm_head<V, C, tied<"embed.weight">>> {
  static constexpr std::size_t vocab_size = V, context_length = Ctx, depth = L, width = C, heads = H, kv_heads = KVH,
                               head_dim = D, ffn = F;
  static constexpr std::size_t lookup_param_count = 0;  // the head multiplies by the embedding's table
};
using gemma_2b = gemma_like<256000, 8192, 2048, 8, 1, 256, 18, 16384>;  // google/gemma-2b's shapes
// example-end gemma-like

static_assert(language_model<gemma_2b>);
static_assert(gemma_2b::param_count == 2506172416);  // as Hugging Face counts google/gemma-2b

namespace {
using tiny_gemma = gemma_like<13, 16, 16, 4, 1, 6, 3, 24>;
template <class Plan>
std::vector<double> losses(std::size_t steps) {
  train_options o;
  o.optimizer.lr = 1e-2f;
  o.seed = 5;
  training_step<Plan> st(o);
  const std::vector<std::int32_t> pattern{0, 3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8, 9, 7, 11, 12, 10};
  std::size_t start = 0;
  std::vector<double> r;
  for (std::size_t s = 0; s < steps; ++s)
    r.push_back(st.step([&](auto tokens, auto targets) {
                    for (std::size_t i = 0; i < tokens.size(); ++i) {
                      tokens[i] = pattern[(start + i) % pattern.size()];
                      targets[i] = pattern[(start + i + 1) % pattern.size()];
                    }
                    start += 5;
                  }).loss);
  return r;
}
}  // namespace

TEST_CASE("a Gemma-shaped composition trains, with the probabilities and with flash_attention alike",
          "[model][gemma]") {
  using p_none = plan<tiny_gemma, batch<micro<2>, seq<16>>, precision<double>>;
  using p_flash = plan<tiny_gemma, batch<micro<2>, seq<16>>, precision<double>, flash_attention>;
  STATIC_REQUIRE(p_none::memory::dims.gated && p_none::memory::dims.head_dim == 6);
  const auto a = losses<p_none>(6), b = losses<p_flash>(6);
  CHECK(a.back() < a.front());  // it learns the pattern
  for (std::size_t i = 0; i < a.size(); ++i) CHECK(std::fabs(a[i] - b[i]) <= 1e-12 * std::fabs(a[i]));
  const std::string text = structure_of<tiny_gemma>();
  CHECK(text.find("embedding_scale") != std::string::npos);
  CHECK(text.find("geglu_tanh") != std::string::npos);
}

/*
 * 02_custom_layer — a new layer type, written outside the library, in a model that trains.
 *
 * weft's layers are types that satisfy the documented `weft::layer` concept (see
 * docs/layers.md). This example writes one from scratch — a squared-ReLU activation, as in
 * the Primer paper — composes it into an MLP and a GPT-style block from weft's public pieces,
 * and trains the model on the fortune corpus. The run checks that the loss falls and exits
 * non-zero if it does not.
 *
 *   build/examples/custom_layer [steps]     (default 150)
 */
#include <weft/weft.hpp>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

using namespace weft;

// ---- the new layer ----
// example-begin custom-layer
/// relu(x)² over rows of width C. No parameters; backward needs only the input.
template <std::size_t C>
struct squared_relu : stateless_layer {  // stateless_layer: no parameters, find_param/visit_params done
  static constexpr std::size_t in_width = C;
  static constexpr std::size_t out_width = C;
  template <std::size_t B, std::size_t S>
  static constexpr std::size_t kept_count = 0;  // nothing kept besides the input
  template <std::size_t B, std::size_t S>
  static constexpr std::size_t scratch_count = 0;

  template <class F>  // F = weft::frame<T, B, S, Root>
  static void forward(const F&, const typename F::value_type* in, typename F::value_type* out) {
    for (std::size_t i = 0; i < F::rows * C; ++i) out[i] = in[i] > 0 ? in[i] * in[i] : 0;  // (rows, C)
  }
  template <class F>  // accumulates into din, as every layer does
  static void backward(const F&, const typename F::value_type* in, const typename F::value_type* dout,
                       typename F::value_type* din) {
    for (std::size_t i = 0; i < F::rows * C; ++i) din[i] += in[i] > 0 ? 2 * in[i] * dout[i] : 0;
  }
};
static_assert(layer<squared_relu<64>>);  // the concept checks the contract at the user's line

// The new MLP and a model built from public pieces around it.
template <std::size_t C>
using relu2_mlp = sequential<named<"c_fc", linear<C, 4 * C, role::column>>, squared_relu<4 * C>,
                             named<"c_proj", linear<4 * C, C, role::row, true, init::normal_residual<20>>>>;

constexpr std::size_t V = 256, Ctx = 64, C = 128, H = 4, L = 2;
using relu2_block = block<layernorm<C>, attention<C, H>, layernorm<C>, relu2_mlp<C>>;

struct relu2_gpt : sequential<named<"wte", token_embedding<V, C>>, named<"wpe", positional_embedding<Ctx, C>>,
                              named<"h", repeat<L, relu2_block>>, named<"ln_f", layernorm<C>>,
                              lm_head<V, C, tied<"wte.weight">>> {
  // What a plan needs to know of a language model (the `language_model` concept).
  static constexpr std::size_t vocab_size = V, context_length = Ctx, depth = L, width = C, heads = H;
  static constexpr std::size_t kv_heads = H, ffn = 4 * C, lookup_param_count = Ctx * C;
  static constexpr const char* family = "relu2-gpt";
};
static_assert(language_model<relu2_gpt>);
// example-end custom-layer

int main(int argc, char** argv) {
  const std::size_t steps = argc > 1 ? std::strtoul(argv[1], nullptr, 10) : 150;
  using P = plan<relu2_gpt, batch<micro<8>, seq<Ctx>>>;
  P::report();

  // Data: the fortune corpus (corpus::open with no path), or a built-in paragraph when it is not installed.
  std::optional<corpus> fortunes;
  text_corpus paragraph{text_options{}};
  if (std::filesystem::is_directory(corpus::fortune_dir)) fortunes.emplace(corpus::open("", "custom_layer", 0, V));
  else
    for (int i = 0; i < 200; ++i) paragraph.add_text("A layer is a type. The compiler checks it; the host trains it. ");
  batch_sampler<8, Ctx> sampler(fortunes ? fortunes->all() : token_view(paragraph), 7);

  train_options o;
  o.optimizer.lr = 3e-3f;
  o.schedule = {20, steps, 0.1f};
  training_step<P> step(o);
  double first = 0, last = 0;
  for (std::size_t s = 0; s < steps; ++s) {
    const auto m = step.step(sampler);
    if (s == 0) first = m.loss;
    last = m.loss;
    if (m.step % 25 == 0 || m.step == steps) std::printf("step %zu loss %.4f (%.0f tok/s)\n", m.step, m.loss, m.tokens_per_second);
  }
  std::printf("loss %.4f -> %.4f\n", first, last);
  if (!(last < first - 0.5)) {
    std::fprintf(stderr, "custom_layer: the loss did not fall by 0.5 nats (%.4f -> %.4f)\n", first, last);
    return 1;
  }
  return 0;
}

// Every layer type's backward against central finite differences, in double.
// For a layer L with parameters θ and input x, the test takes the scalar loss
//   loss(θ, x) = sum(L(θ, x) ⊙ R)        (R random, the shape of the output)
// whose gradient w.r.t. the output is R; so backward(dout = R) must give d loss/dθ and d loss/dx,
// which are compared with (loss(· + h) - loss(· - h)) / 2h for every element of θ and x.
#include <weft/model.hpp>

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

namespace {

using namespace weft;

// ---- comparison of an analytic gradient with a finite-difference one ----
// Two measures, both must be <= 1e-6:
//  * norm-wise: ||a - b|| / ||b|| over the whole tensor;
//  * element-wise: |a_i - b_i| / max(|a_i|, |b_i|, floor), floor = 1e-3 · max_j |b_j|. Central
//    differences with h = 1e-5 carry an absolute error of about 1e-10 (round-off eps·|loss|/h plus
//    truncation h²·f'''), so an element is judged relative to itself only where it is large enough
//    for that noise to be below 1e-6 of it; smaller elements (a token row that was never looked up,
//    a masked attention score) are judged against the floor instead of blowing the ratio up.
struct grad_error {
  double norm = 0;     // ||a - b|| / ||b||
  double element = 0;  // worst element-wise error
  std::size_t worst = 0;
};

grad_error compare(const std::vector<double>& analytic, const std::vector<double>& numeric) {
  grad_error e;
  double diff2 = 0, ref2 = 0, ref_max = 0;
  for (std::size_t i = 0; i < numeric.size(); ++i) {
    diff2 += (analytic[i] - numeric[i]) * (analytic[i] - numeric[i]);
    ref2 += numeric[i] * numeric[i];
    ref_max = std::max(ref_max, std::abs(numeric[i]));
  }
  e.norm = ref2 > 0 ? std::sqrt(diff2 / ref2) : std::sqrt(diff2);
  const double floor = std::max(1e-3 * ref_max, 1e-12);
  for (std::size_t i = 0; i < numeric.size(); ++i) {
    const double d = std::abs(analytic[i] - numeric[i]) /
                     std::max({std::abs(analytic[i]), std::abs(numeric[i]), floor});
    if (d > e.element) e.element = d, e.worst = i;
  }
  return e;
}

constexpr double tolerance = 1e-6;
constexpr double fd_step = 1e-5;

std::vector<double> random_values(std::size_t n, std::mt19937_64& g, double lo = -1.0, double hi = 1.0) {
  std::uniform_real_distribution<double> d(lo, hi);
  std::vector<double> v(n);
  for (auto& x : v) x = d(g);
  return v;
}

// Vectors never empty, so .data() is a real pointer even for a layer with no parameters.
std::size_t at_least_one(std::size_t n) { return n == 0 ? 1 : n; }

// Vocabulary of the layer that reads the token ids: the layer itself, or the first child of a
// composition (sequential's child<0>, named's inner).
template <class L>
constexpr std::size_t token_vocab() {
  if constexpr (requires { L::vocab_size; }) return L::vocab_size;
  else if constexpr (requires { typename L::inner; }) return token_vocab<typename L::inner>();
  else if constexpr (requires { typename L::template child<0>; }) return token_vocab<typename L::template child<0>>();
  else return 1;
}

// ---- one layer in a frame over std::vector buffers ----
// `Root` is the model the layer sits in: the layer itself, or (for a tied head) a model that owns
// the tied parameter. With a separate root, the layer's own block and the root's block are two
// buffers, both checked.
template <class Layer, std::size_t B, std::size_t S, class Root = Layer>
struct harness {
  using frame_type = frame<double, B, S, Root>;
  static constexpr std::size_t rows = B * S;
  static constexpr bool takes_tokens = Layer::in_width == 0;  // in is token ids, no input gradient
  static constexpr bool separate_root = !std::is_same_v<Layer, Root>;
  static constexpr std::size_t in_count = rows * Layer::in_width;
  static constexpr std::size_t out_count = rows * Layer::out_width;
  static constexpr std::size_t vocab_for_tokens = token_vocab<Layer>();

  std::mt19937_64 gen;
  std::vector<double> params, grads, root_params, root_grads, kept, scratch, in, din, r, out;
  std::vector<std::int32_t> tokens;

  explicit harness(unsigned seed) : gen(seed) {
    const double nan = std::numeric_limits<double>::quiet_NaN();
    params = random_values(at_least_one(Layer::param_count), gen);
    grads.assign(params.size(), 0.0);
    if constexpr (separate_root) {
      root_params = random_values(at_least_one(Root::param_count), gen);
      root_grads.assign(root_params.size(), 0.0);
    }
    // Kept activations and workspace start as NaN: a layer that reads them before writing them
    // poisons its output or gradient, which the comparison then reports.
    kept.assign(at_least_one(Layer::template kept_count<B, S>), nan);
    scratch.assign(at_least_one(Layer::template scratch_count<B, S>), nan);
    in = random_values(at_least_one(in_count), gen);
    din.assign(in.size(), 0.0);
    r = random_values(at_least_one(out_count), gen);
    out.assign(at_least_one(out_count), nan);
    std::uniform_int_distribution<int> tok(0, static_cast<int>(vocab_for_tokens) - 1);
    tokens.resize(rows);
    for (auto& t : tokens) t = tok(gen);
  }

  frame_type frame_of() {
    frame_type f;
    f.params = params.data();
    f.grads = grads.data();
    f.kept = kept.data();
    f.scratch = scratch.data();
    f.root_params = separate_root ? root_params.data() : params.data();
    f.root_grads = separate_root ? root_grads.data() : grads.data();
    f.tokens = tokens.data();
    return f;
  }
  const double* input() const { return takes_tokens ? nullptr : in.data(); }

  double loss() {
    Layer::forward(frame_of(), input(), out.data());  // (batch, seq, out_width)
    double s = 0;
    for (std::size_t i = 0; i < out_count; ++i) s += out[i] * r[i];
    return s;
  }
  // forward then backward(dout = R), accumulating into grads / root_grads / din.
  void forward_backward() {
    (void)loss();
    Layer::backward(frame_of(), input(), r.data(), takes_tokens ? nullptr : din.data());
  }

  // Central differences of loss() w.r.t. the first n elements of x (restored afterwards).
  std::vector<double> numeric_gradient(std::vector<double>& x, std::size_t n) {
    std::vector<double> g(n);
    for (std::size_t i = 0; i < n; ++i) {
      const double x0 = x[i];
      x[i] = x0 + fd_step;
      const double up = loss();
      x[i] = x0 - fd_step;
      const double down = loss();
      x[i] = x0;
      g[i] = (up - down) / (2 * fd_step);
    }
    return g;
  }
};

template <class V>
std::vector<double> head(const V& v, std::size_t n) {
  return std::vector<double>(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(n));
}

void check(const std::string& what, const std::vector<double>& analytic, const std::vector<double>& numeric) {
  const grad_error e = compare(analytic, numeric);
  std::ostringstream msg;
  msg << what << ": " << numeric.size() << " elements, norm-wise error " << e.norm << ", worst element " << e.worst
      << " error " << e.element;
  if (!numeric.empty()) msg << " (analytic " << analytic[e.worst] << ", numeric " << numeric[e.worst] << ")";
  INFO(msg.str());
  CHECK(e.norm <= tolerance);
  CHECK(e.element <= tolerance);
}

/// Checks every parameter element and every input element of `Layer` (micro-batch B x S) against
/// central finite differences; with a separate `Root`, also the root's parameters (tied weights).
template <class Layer, std::size_t B, std::size_t S, class Root = Layer>
void check_layer_gradients(unsigned seed = 1) {
  static_assert(layer<Layer>);
  using H = harness<Layer, B, S, Root>;
  H h(seed);
  h.forward_backward();
  for (std::size_t i = 0; i < H::out_count; ++i) REQUIRE(std::isfinite(h.out[i]));

  if constexpr (Layer::param_count > 0)
    check("parameters", head(h.grads, Layer::param_count), h.numeric_gradient(h.params, Layer::param_count));
  if constexpr (H::separate_root)
    check("root parameters", head(h.root_grads, Root::param_count), h.numeric_gradient(h.root_params, Root::param_count));
  if constexpr (!H::takes_tokens)
    check("input", head(h.din, H::in_count), h.numeric_gradient(h.in, H::in_count));
}

/// Backward accumulates: a second backward adds the same gradients again (so the totals double),
/// and gradients already in the buffers are kept.
template <class Layer, std::size_t B, std::size_t S, class Root = Layer>
void check_accumulates(unsigned seed = 2) {
  using H = harness<Layer, B, S, Root>;
  H once(seed), twice(seed), preset(seed);
  once.forward_backward();
  twice.forward_backward();
  twice.forward_backward();
  // Pre-filled gradient buffers: backward must add to, not overwrite, them.
  std::mt19937_64 g(seed + 100);
  const auto g0 = random_values(preset.grads.size(), g);
  const auto d0 = random_values(preset.din.size(), g);
  preset.grads = g0;
  preset.din = d0;
  preset.forward_backward();

  auto expect_scaled = [](const std::vector<double>& got, const std::vector<double>& base, double k,
                          const std::vector<double>* offset, std::size_t n) {
    bool any_nonzero = false;
    for (std::size_t i = 0; i < n; ++i) {
      const double want = k * base[i] + (offset ? (*offset)[i] : 0.0);
      INFO("element " << i);
      REQUIRE(got[i] == Approx(want).epsilon(1e-12).margin(1e-13));
      any_nonzero = any_nonzero || base[i] != 0;
    }
    return any_nonzero;
  };
  if constexpr (Layer::param_count > 0) {
    CHECK(expect_scaled(twice.grads, once.grads, 2.0, nullptr, Layer::param_count));
    CHECK(expect_scaled(preset.grads, once.grads, 1.0, &g0, Layer::param_count));
  }
  if constexpr (!H::takes_tokens) {
    CHECK(expect_scaled(twice.din, once.din, 2.0, nullptr, H::in_count));
    CHECK(expect_scaled(preset.din, once.din, 1.0, &d0, H::in_count));
  }
}

// ---- small dimensions ----
constexpr std::size_t C = 8;   // width
constexpr std::size_t V = 11;  // vocabulary

// A root model that owns "wte.weight", so a head tied to it resolves.
using tied_head = lm_head<V, C, tied<"wte.weight">>;
using tied_root = sequential<named<"wte", token_embedding<V, C>>, tied_head>;

using norm_linear = sequential<named<"ln", layernorm<C>>, named<"fc", linear<C, C>>>;
using gpt_like_block = block<layernorm<C>, attention<C, 2>, layernorm<C>, gelu_mlp<C, 4 * C>>;
using llama_like_block = block<rmsnorm<C>, attention<C, 4, 2, rope, false>, rmsnorm<C>, swiglu_mlp<C, 12>>;

}  // namespace

// ---- leaf layers ----

TEST_CASE("token_embedding gradients", "[model][gradients]") { check_layer_gradients<token_embedding<V, C>, 2, 4>(); }

TEST_CASE("positional_embedding gradients", "[model][gradients]") {
  check_layer_gradients<positional_embedding<6, C>, 2, 4>();  // seq shorter than the context
  check_layer_gradients<positional_embedding<5, C>, 2, 5>();  // seq equal to the context
}

TEST_CASE("layernorm gradients", "[model][gradients]") { check_layer_gradients<layernorm<C>, 2, 3>(); }

TEST_CASE("rmsnorm gradients", "[model][gradients]") { check_layer_gradients<rmsnorm<C>, 2, 3>(); }

TEST_CASE("linear gradients", "[model][gradients]") {
  SECTION("with bias") { check_layer_gradients<linear<C, 6>, 2, 3>(); }
  SECTION("without bias") { check_layer_gradients<linear<C, 6, role::column, false>, 2, 3>(); }
}

TEST_CASE("gelu gradients", "[model][gradients]") { check_layer_gradients<gelu<C>, 2, 3>(); }

TEST_CASE("swiglu gradients", "[model][gradients]") { check_layer_gradients<swiglu<4>, 2, 3>(); }

TEST_CASE("causal_attention gradients", "[model][gradients]") {
  SECTION("no rope") { check_layer_gradients<causal_attention<2, 2, 4, no_rope>, 2, 4>(); }
  SECTION("rope") { check_layer_gradients<causal_attention<2, 2, 4, rope>, 2, 4>(); }
  SECTION("grouped-query, rope") { check_layer_gradients<causal_attention<4, 2, 2, rope>, 2, 5>(); }
  SECTION("grouped-query, one kv head, no rope") { check_layer_gradients<causal_attention<4, 1, 2, no_rope>, 2, 4>(); }
}

TEST_CASE("lm_head gradients", "[model][gradients]") {
  SECTION("untied") { check_layer_gradients<lm_head<V, C>, 2, 3>(); }
  SECTION("tied, alone: gradient reaches the root's wte.weight") {
    STATIC_REQUIRE(tied_head::param_count == 0);
    check_layer_gradients<tied_head, 2, 3, tied_root>();
  }
  SECTION("tied, in its root: embedding and head gradients add up in wte.weight") {
    check_layer_gradients<tied_root, 2, 3>();
  }
}

// ---- compositions ----

TEST_CASE("named gradients", "[model][gradients]") { check_layer_gradients<named<"x", linear<C, 6>>, 2, 3>(); }

TEST_CASE("residual gradients", "[model][gradients]") {
  check_layer_gradients<residual<linear<C, C>>, 2, 3>();
  check_layer_gradients<residual<norm_linear>, 2, 3>();
}

TEST_CASE("sequential gradients", "[model][gradients]") {
  check_layer_gradients<sequential<linear<C, 12>>, 2, 3>();  // one child: no intermediates
  check_layer_gradients<sequential<linear<C, 12>, gelu<12>, linear<12, 6>>, 2, 3>();
  // intermediates of different widths share the ping-pong buffers
  check_layer_gradients<sequential<layernorm<C>, linear<C, 16>, swiglu<8>, linear<8, 4>, rmsnorm<4>>, 2, 4>();
}

TEST_CASE("repeat gradients", "[model][gradients]") {
  check_layer_gradients<repeat<3, residual<norm_linear>>, 2, 3>();
  check_layer_gradients<repeat<1, linear<C, C>>, 2, 3>();
}

TEST_CASE("attention gradients", "[model][gradients]") {
  SECTION("multi-head, biases, no rope") { check_layer_gradients<attention<C, 2>, 2, 4>(); }
  SECTION("grouped-query, rope, no biases") { check_layer_gradients<attention<C, 4, 2, rope, false>, 2, 4>(); }
}

TEST_CASE("gelu_mlp gradients", "[model][gradients]") { check_layer_gradients<gelu_mlp<C, 4 * C>, 2, 3>(); }

TEST_CASE("swiglu_mlp gradients", "[model][gradients]") { check_layer_gradients<swiglu_mlp<C, 12>, 2, 3>(); }

TEST_CASE("block gradients", "[model][gradients]") {
  SECTION("GPT-2 style") { check_layer_gradients<gpt_like_block, 2, 4>(); }
  SECTION("LLaMA style") { check_layer_gradients<llama_like_block, 2, 4>(); }
  SECTION("repeated") { check_layer_gradients<repeat<2, gpt_like_block>, 2, 3>(); }
}

// ---- accumulation ----

TEST_CASE("backward accumulates into parameter and input gradients", "[model][gradients][accumulate]") {
  SECTION("linear") { check_accumulates<linear<C, 6>, 2, 3>(); }
  SECTION("layernorm") { check_accumulates<layernorm<C>, 2, 3>(); }
  SECTION("rmsnorm") { check_accumulates<rmsnorm<C>, 2, 3>(); }
  SECTION("causal_attention with rope") { check_accumulates<causal_attention<4, 2, 2, rope>, 2, 4>(); }
  SECTION("positional_embedding") { check_accumulates<positional_embedding<6, C>, 2, 4>(); }
  SECTION("token_embedding") { check_accumulates<token_embedding<V, C>, 2, 4>(); }
  SECTION("tied head in its root") { check_accumulates<tied_root, 2, 3>(); }
  SECTION("residual block") { check_accumulates<residual<norm_linear>, 2, 3>(); }
  SECTION("repeat of blocks") { check_accumulates<repeat<2, gpt_like_block>, 2, 3>(); }
  SECTION("swiglu_mlp") { check_accumulates<swiglu_mlp<C, 12>, 2, 3>(); }
}

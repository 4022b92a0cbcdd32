#pragma once
// ---- finite-difference gradient checks for layers, in f64 ----
// For a layer L with parameters θ and input x, the check takes the scalar loss
//   loss(θ, x) = sum(L(θ, x) ⊙ R)        (R random, the shape of the output)
// whose gradient w.r.t. the output is R; so backward(dout = R) must give d loss/dθ and d loss/dx,
// which are compared with central differences (loss(· + h) - loss(· - h)) / 2h for every element
// of θ and x (and of the root model's parameters, for a layer that reaches them: a tied head).
//
//   auto r = weft::testing::check_gradients<my_layer, 2, 4>();
//   if (!r.ok()) std::puts(r.summary().c_str());
//
// Framework-neutral: the checks return reports; tests assert on ok() and print summary().
// Kept activations and workspace start as NaN, so a layer that reads them before writing them
// poisons its output or gradient and fails. See docs/gradient_check.md.
#include "weft/model/layer.hpp"  // layer, frame

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace weft::testing {

/// Step and tolerance of a finite-difference check.
struct gradient_check_options {
  double step = 1e-5;       ///< h of the central differences
  double tolerance = 1e-6;  ///< both the norm-wise and the element-wise error must be at most this
  unsigned seed = 1;        ///< parameters, input, R and token ids are drawn from it
};

/// One tensor (parameters, input, root parameters) compared.
/// Two measures, both must be <= tolerance:
///  * norm-wise: ||a - b|| / ||b|| over the whole tensor;
///  * element-wise: |a_i - b_i| / max(|a_i|, |b_i|, floor), floor = 1e-3 · max_j |b_j|. Central
///    differences with h = 1e-5 carry an absolute error of about 1e-10 (round-off eps·|loss|/h plus
///    truncation h²·f'''), so an element is judged relative to itself only where it is large
///    enough for that noise to be below 1e-6 of it; smaller elements (a token row never looked up,
///    a masked attention score) are judged against the floor instead.
struct tensor_gradient_error {
  std::string what;         ///< "parameters", "input" or "root parameters"
  std::size_t count = 0;    ///< elements compared
  double norm = 0;          ///< ||a - b|| / ||b||
  double element = 0;       ///< worst element-wise error
  std::size_t worst = 0;    ///< its index
  double analytic = 0;      ///< backward's value there
  double numeric = 0;       ///< the finite difference there
  double tolerance = 1e-6;
  bool ok() const { return std::isfinite(norm) && std::isfinite(element) && norm <= tolerance && element <= tolerance; }
};

/// What check_gradients found.
struct gradient_report {
  bool finite_output = true;  ///< forward wrote a finite value to every output element
  std::vector<tensor_gradient_error> tensors;
  bool ok() const {
    return finite_output && std::all_of(tensors.begin(), tensors.end(), [](const auto& t) { return t.ok(); });
  }
  /// One line per tensor: elements, both errors, and the worst element's two values.
  std::string summary() const {
    std::ostringstream s;
    if (!finite_output) s << "forward wrote a non-finite output\n";
    for (const auto& t : tensors) {
      s << t.what << ": " << t.count << " elements, norm-wise error " << t.norm << ", worst element " << t.worst
        << " error " << t.element;
      if (t.count) s << " (analytic " << t.analytic << ", numeric " << t.numeric << ")";
      s << (t.ok() ? " ok" : " FAILED") << '\n';
    }
    return s.str();
  }
};

/// Compares an analytic gradient with a numeric one (see tensor_gradient_error).
inline tensor_gradient_error compare_gradients(std::string what, const std::vector<double>& analytic,
                                               const std::vector<double>& numeric, double tolerance = 1e-6) {
  tensor_gradient_error e;
  e.what = std::move(what);
  e.count = numeric.size();
  e.tolerance = tolerance;
  double diff2 = 0, ref2 = 0, ref_max = 0;
  for (std::size_t i = 0; i < numeric.size(); ++i) {
    diff2 += (analytic[i] - numeric[i]) * (analytic[i] - numeric[i]);
    ref2 += numeric[i] * numeric[i];
    ref_max = std::max(ref_max, std::abs(numeric[i]));
  }
  e.norm = ref2 > 0 ? std::sqrt(diff2 / ref2) : std::sqrt(diff2);
  const double floor = std::max(1e-3 * ref_max, 1e-12);
  for (std::size_t i = 0; i < numeric.size(); ++i) {
    const double d =
        std::abs(analytic[i] - numeric[i]) / std::max({std::abs(analytic[i]), std::abs(numeric[i]), floor});
    if (!(d <= e.element)) e.element = d, e.worst = i;  // NaN counts as worst
  }
  if (e.count) e.analytic = analytic[e.worst], e.numeric = numeric[e.worst];
  return e;
}

namespace detail {
inline std::vector<double> random_values(std::size_t n, std::mt19937_64& g, double lo = -1.0, double hi = 1.0) {
  std::uniform_real_distribution<double> d(lo, hi);
  std::vector<double> v(n);
  for (auto& x : v) x = d(g);
  return v;
}

// Vectors never empty, so .data() is a real pointer even for a layer with no parameters.
constexpr std::size_t at_least_one(std::size_t n) { return n == 0 ? 1 : n; }

// Vocabulary of the layer that reads the token ids: the layer itself, or the first child of a
// composition (sequential's child<0>, named's inner).
template <class L>
constexpr std::size_t token_vocab() {
  if constexpr (requires { L::vocab_size; }) return L::vocab_size;
  else if constexpr (requires { typename L::inner; }) return token_vocab<typename L::inner>();
  else if constexpr (requires { typename L::template child<0>; }) return token_vocab<typename L::template child<0>>();
  else return 1;
}

template <class V>
std::vector<double> head(const V& v, std::size_t n) {
  return std::vector<double>(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(n));
}
}  // namespace detail

/// One layer in a frame over std::vector buffers, in f64. `Root` is the model the layer sits in:
/// the layer itself, or (for a tied head) a model that owns the tied parameter; with a separate
/// root, the layer's own block and the root's block are two buffers.
template <layer Layer, std::size_t B, std::size_t S, class Root = Layer>
struct layer_harness {
  using frame_type = frame<double, B, S, Root>;
  static constexpr std::size_t rows = B * S;
  static constexpr bool takes_tokens = Layer::in_width == 0;  // in is token ids, no input gradient
  static constexpr bool separate_root = !std::is_same_v<Layer, Root>;
  static constexpr std::size_t in_count = rows * Layer::in_width;
  static constexpr std::size_t out_count = rows * Layer::out_width;
  static constexpr std::size_t vocab_for_tokens = detail::token_vocab<Layer>();

  double step = 1e-5;
  std::mt19937_64 gen;
  std::vector<double> params, grads, root_params, root_grads, kept, scratch, in, din, r, out;
  std::vector<std::int32_t> tokens;

  explicit layer_harness(unsigned seed, double h = 1e-5) : step(h), gen(seed) {
    using detail::at_least_one;
    const double nan = std::numeric_limits<double>::quiet_NaN();
    params = detail::random_values(at_least_one(Layer::param_count), gen);
    grads.assign(params.size(), 0.0);
    if constexpr (separate_root) {
      root_params = detail::random_values(at_least_one(Root::param_count), gen);
      root_grads.assign(root_params.size(), 0.0);
    }
    // Kept activations and workspace start as NaN (see the top of the file).
    kept.assign(at_least_one(Layer::template kept_count<B, S>), nan);
    scratch.assign(at_least_one(Layer::template scratch_count<B, S>), nan);
    in = detail::random_values(at_least_one(in_count), gen);
    din.assign(in.size(), 0.0);
    r = detail::random_values(at_least_one(out_count), gen);
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

  /// sum(forward(θ, x) ⊙ R).
  double loss() {
    Layer::forward(frame_of(), input(), out.data());  // (batch, seq, out_width)
    double s = 0;
    for (std::size_t i = 0; i < out_count; ++i) s += out[i] * r[i];
    return s;
  }
  /// forward then backward(dout = R), accumulating into grads / root_grads / din.
  void forward_backward() {
    (void)loss();
    Layer::backward(frame_of(), input(), r.data(), takes_tokens ? nullptr : din.data());
  }

  /// Central differences of loss() w.r.t. the first n elements of x (restored afterwards).
  std::vector<double> numeric_gradient(std::vector<double>& x, std::size_t n) {
    std::vector<double> g(n);
    for (std::size_t i = 0; i < n; ++i) {
      const double x0 = x[i];
      x[i] = x0 + step;
      const double up = loss();
      x[i] = x0 - step;
      const double down = loss();
      x[i] = x0;
      g[i] = (up - down) / (2 * step);
    }
    return g;
  }
};

/// Checks every parameter element and every input element of `Layer` (micro-batch B x S) against
/// central finite differences; with a separate `Root`, also the root's parameters (tied weights).
/// Cost: 2 forwards per element checked, so keep the layer small (width 8, B·S of 6 to 12).
template <layer Layer, std::size_t B, std::size_t S, class Root = Layer>
gradient_report check_gradients(gradient_check_options o = {}) {
  using H = layer_harness<Layer, B, S, Root>;
  H h(o.seed, o.step);
  h.forward_backward();
  gradient_report rep;
  for (std::size_t i = 0; i < H::out_count; ++i) rep.finite_output = rep.finite_output && std::isfinite(h.out[i]);
  if constexpr (Layer::param_count > 0)
    rep.tensors.push_back(compare_gradients("parameters", detail::head(h.grads, Layer::param_count),
                                            h.numeric_gradient(h.params, Layer::param_count), o.tolerance));
  if constexpr (H::separate_root)
    rep.tensors.push_back(compare_gradients("root parameters", detail::head(h.root_grads, Root::param_count),
                                            h.numeric_gradient(h.root_params, Root::param_count), o.tolerance));
  if constexpr (!H::takes_tokens)
    rep.tensors.push_back(compare_gradients("input", detail::head(h.din, H::in_count),
                                            h.numeric_gradient(h.in, H::in_count), o.tolerance));
  return rep;
}

/// What check_accumulates found: worst relative deviation from the expected sums, and whether
/// the gradients were non-zero at all (an all-zero backward passes the sums trivially).
struct accumulation_report {
  double twice_params = 0, preset_params = 0, twice_input = 0, preset_input = 0;  ///< worst deviations
  bool params_nonzero = true, input_nonzero = true;                               ///< where they apply
  double tolerance = 1e-12;
  bool ok() const {
    const double w = std::max({twice_params, preset_params, twice_input, preset_input});
    return std::isfinite(w) && w <= tolerance && params_nonzero && input_nonzero;
  }
  std::string summary() const {
    std::ostringstream s;
    s << "second backward doubles: parameters " << twice_params << ", input " << twice_input
      << "; pre-filled buffers kept: parameters " << preset_params << ", input " << preset_input
      << "; gradients non-zero: parameters " << params_nonzero << ", input " << input_nonzero
      << (ok() ? " ok" : " FAILED") << '\n';
    return s.str();
  }
};

/// Backward accumulates: a second backward adds the same gradients again (so the totals double),
/// and gradients already in the buffers are kept (backward adds, never overwrites).
template <layer Layer, std::size_t B, std::size_t S, class Root = Layer>
accumulation_report check_accumulates(unsigned seed = 2) {
  using H = layer_harness<Layer, B, S, Root>;
  H once(seed), twice(seed), preset(seed);
  once.forward_backward();
  twice.forward_backward();
  twice.forward_backward();
  std::mt19937_64 g(seed + 100);
  const auto g0 = detail::random_values(preset.grads.size(), g);
  const auto d0 = detail::random_values(preset.din.size(), g);
  preset.grads = g0;
  preset.din = d0;
  preset.forward_backward();

  // Worst |got - want| / max(|want|, 1e-1) (so 1e-12 relative, 1e-13 absolute near zero).
  auto deviation = [](const std::vector<double>& got, const std::vector<double>& base, double k,
                      const std::vector<double>* offset, std::size_t n, bool& nonzero) {
    double worst = 0;
    nonzero = false;
    for (std::size_t i = 0; i < n; ++i) {
      const double want = k * base[i] + (offset ? (*offset)[i] : 0.0);
      const double d = std::abs(got[i] - want) / std::max(std::abs(want), 1e-1);
      if (!(d <= worst)) worst = d;
      nonzero = nonzero || base[i] != 0;
    }
    return worst;
  };
  accumulation_report rep;
  if constexpr (Layer::param_count > 0) {
    rep.twice_params = deviation(twice.grads, once.grads, 2.0, nullptr, Layer::param_count, rep.params_nonzero);
    rep.preset_params = deviation(preset.grads, once.grads, 1.0, &g0, Layer::param_count, rep.params_nonzero);
  }
  if constexpr (!H::takes_tokens) {
    rep.twice_input = deviation(twice.din, once.din, 2.0, nullptr, H::in_count, rep.input_nonzero);
    rep.preset_input = deviation(preset.din, once.din, 1.0, &d0, H::in_count, rep.input_nonzero);
  }
  return rep;
}

}  // namespace weft::testing

// The public finite-difference checker (weft/testing/gradient_check.hpp) finds the mistakes a
// layer author makes: a wrong derivative, a backward that overwrites instead of accumulating,
// a forward that reads workspace it never wrote, a parameter gradient never written.
#include <weft/model.hpp>
#include <weft/testing/gradient_check.hpp>

#include <catch2/catch.hpp>

#include <cstddef>
#include <cstdio>
#include <string>

using namespace weft;

namespace {

// x² with the derivative off by a factor (Scale = 2 is right).
template <std::size_t C, int Scale>
struct square : stateless_layer {
  static constexpr std::size_t in_width = C, out_width = C;
  template <std::size_t B, std::size_t S>
  static constexpr std::size_t kept_count = 0;
  template <std::size_t B, std::size_t S>
  static constexpr std::size_t scratch_count = 1;
  template <class F>
  static void forward(const F&, const typename F::value_type* in, typename F::value_type* out) {
    for (std::size_t i = 0; i < F::rows * C; ++i) out[i] = in[i] * in[i];
  }
  template <class F>
  static void backward(const F&, const typename F::value_type* in, const typename F::value_type* dout,
                       typename F::value_type* din) {
    for (std::size_t i = 0; i < F::rows * C; ++i) din[i] += Scale * in[i] * dout[i];
  }
};

// Right derivative, but assigns din instead of adding to it.
template <std::size_t C>
struct overwriting_square : square<C, 2> {
  template <class F>
  static void backward(const F&, const typename F::value_type* in, const typename F::value_type* dout,
                       typename F::value_type* din) {
    for (std::size_t i = 0; i < F::rows * C; ++i) din[i] = 2 * in[i] * dout[i];
  }
};

// Adds a workspace element it never wrote (NaN in the harness) to its output.
template <std::size_t C>
struct reads_stale_scratch : square<C, 2> {
  template <class F>
  static void forward(const F& f, const typename F::value_type* in, typename F::value_type* out) {
    for (std::size_t i = 0; i < F::rows * C; ++i) out[i] = in[i] * in[i] + 0 * f.scratch[0];
  }
};

// out = in · w (a per-column gain) whose backward forgets the parameter gradient.
template <std::size_t C>
struct gain_without_grad : leaf_layer<param_list<param<"g", shape<axis<"width", C>>>>> {
  static constexpr std::size_t in_width = C, out_width = C;
  template <std::size_t B, std::size_t S>
  static constexpr std::size_t kept_count = 0;
  template <std::size_t B, std::size_t S>
  static constexpr std::size_t scratch_count = 0;
  template <class F>
  static void forward(const F& f, const typename F::value_type* in, typename F::value_type* out) {
    for (std::size_t i = 0; i < F::rows * C; ++i) out[i] = in[i] * f.params[i % C];
  }
  template <class F>
  static void backward(const F& f, const typename F::value_type*, const typename F::value_type* dout,
                       typename F::value_type* din) {
    for (std::size_t i = 0; i < F::rows * C; ++i) din[i] += dout[i] * f.params[i % C];
  }
};

}  // namespace

TEST_CASE("gradient check passes a right backward and measures tiny errors", "[model][gradient_check]") {
  const auto r = testing::check_gradients<square<8, 2>, 2, 3>();
  INFO(r.summary());
  REQUIRE(r.tensors.size() == 1);  // no parameters: the input only
  CHECK(r.tensors[0].what == "input");
  CHECK(r.tensors[0].count == 2 * 3 * 8);
  CHECK(r.ok());
  CHECK(r.tensors[0].norm < 1e-8);
  CHECK(testing::check_accumulates<square<8, 2>, 2, 3>().ok());
  CHECK(testing::check_gradients<linear<8, 6>, 2, 3>().ok());
}

TEST_CASE("gradient check of a user layer, as docs/gradient_check.md shows it", "[model][gradient_check]") {
  // example-begin gradient-check
  // f64, micro-batch 2 x 3; every parameter and input element against central differences.
  const weft::testing::gradient_report r = weft::testing::check_gradients<gain_without_grad<8>, 2, 3>();
  if (!r.ok()) std::fputs(r.summary().c_str(), stderr);  // one line per tensor, the worst element
  // example-end gradient-check
  CHECK_FALSE(r.ok());
}

TEST_CASE("gradient check fails a wrong derivative", "[model][gradient_check]") {
  const auto r = testing::check_gradients<square<8, 3>, 2, 3>();
  INFO(r.summary());
  CHECK_FALSE(r.ok());
  CHECK(r.tensors[0].norm == Approx(0.5).epsilon(1e-6));  // (3x - 2x)·r against 2x·r
  CHECK(r.summary().find("FAILED") != std::string::npos);
}

TEST_CASE("gradient check fails a backward that overwrites", "[model][gradient_check]") {
  CHECK(testing::check_gradients<overwriting_square<8>, 2, 3>().ok());  // one backward cannot tell
  const auto a = testing::check_accumulates<overwriting_square<8>, 2, 3>();
  INFO(a.summary());
  CHECK_FALSE(a.ok());
  CHECK(a.twice_input > 0.1);
}

TEST_CASE("gradient check fails a forward that reads unwritten workspace", "[model][gradient_check]") {
  const auto r = testing::check_gradients<reads_stale_scratch<8>, 2, 3>();
  CHECK_FALSE(r.finite_output);
  CHECK_FALSE(r.ok());
}

TEST_CASE("gradient check fails a missing parameter gradient", "[model][gradient_check]") {
  const auto r = testing::check_gradients<gain_without_grad<8>, 2, 3>();
  INFO(r.summary());
  REQUIRE(r.tensors.size() == 2);
  CHECK_FALSE(r.tensors[0].ok());  // parameters: all zero, the numeric gradient is not
  CHECK(r.tensors[1].ok());        // input: right
  CHECK_FALSE(r.ok());
}

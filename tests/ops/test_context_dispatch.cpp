// Ops are found through the execution context's type: a backend declares its op bodies
// after the model headers (as backend/cuda/ops/<op>.cuh will), and an unchanged layer calls
// them. Here a recording context stands in for a device backend.
#include "weft/model/gelu.hpp"      // gelu (a layer calling ops::gelu_forward/backward)
#include "weft/model/layer.hpp"     // frame
#include "weft/model/residual.hpp"  // residual (calls ops::residual_forward and ops::accumulate)
#include "weft/ops/gelu.hpp"        // gelu_forward_op

#include <catch2/catch.hpp>

#include <string>
#include <vector>

// ---- declared after the layers: the lookup must still find these ----
namespace fake_backend {
struct recording_context {
  using memory_space = weft::host_space;
  std::vector<std::string>* log = nullptr;
};
}  // namespace fake_backend

namespace weft::ops {
template <std::size_t N, class T>
void op_impl(gelu_forward_op<N>, const fake_backend::recording_context& c, T* out, const T* in) {
  c.log->push_back("gelu_forward " + std::to_string(N));
  for (std::size_t i = 0; i < N; ++i) out[i] = in[i];
}
template <std::size_t N, class T>
void op_impl(gelu_backward_op<N>, const fake_backend::recording_context& c, T*, const T*, const T*) {
  c.log->push_back("gelu_backward " + std::to_string(N));
}
}  // namespace weft::ops

namespace fake_backend {  // beside the context works too: found through the context's namespace
template <class T>
void op_impl(weft::ops::accumulate_op, const recording_context& c, T*, const T*, std::size_t n) {
  c.log->push_back("accumulate " + std::to_string(n));
}
template <std::size_t N, class T>
void op_impl(weft::ops::residual_forward_op<N>, const recording_context& c, T*, const T*, const T*) {
  c.log->push_back("residual_forward " + std::to_string(N));
}
}  // namespace fake_backend

namespace {
struct root {
  static constexpr std::size_t find_param(std::string_view) { return weft::npos_param; }
};
}  // namespace

TEST_CASE("a layer's ops dispatch on the frame's context, declared after the layer", "[ops][context]") {
  using F = weft::frame<float, 2, 3, root, fake_backend::recording_context>;
  static_assert(weft::execution_context<fake_backend::recording_context>);
  static_assert(weft::host_execution_context<weft::host_context>);
  std::vector<std::string> log;
  F f;
  f.ctx.log = &log;
  std::vector<float> in(2 * 3 * 4, 1.0f), out(in.size()), d(in.size());
  weft::gelu<4>::forward(f, in.data(), out.data());
  weft::gelu<4>::backward(f, in.data(), out.data(), d.data());
  weft::residual<weft::gelu<4>>::forward(f, in.data(), out.data());
  weft::residual<weft::gelu<4>>::backward(f, in.data(), out.data(), d.data());
  CHECK(log == std::vector<std::string>{"gelu_forward 24", "gelu_backward 24", "gelu_forward 24",
                                        "residual_forward 24", "accumulate 24", "gelu_backward 24"});
}

TEST_CASE("the same layer on the host context runs the host bodies", "[ops][context]") {
  using F = weft::frame<double, 1, 2, root>;  // Ctx defaults to host_context
  static_assert(std::is_same_v<F::context_type, weft::host_context>);
  F f;
  std::vector<double> in{0.0, 1.0, -1.0, 2.0}, out(4);
  weft::gelu<2>::forward(f, in.data(), out.data());
  CHECK(out[0] == 0.0);
  CHECK(out[1] == Approx(0.841192).epsilon(1e-5));
}

// Tensor parallelism for layers and compositions a user writes: parallel blocks (branch_sum)
// and the bias-free layernorm get their tensor-parallel form from weft; a user's own leaf layer
// gets one from a tp_shard specialisation (docs/composite_layers.md shows these). On two
// threads, tp 2 and tp 2 + sequence parallelism reproduce the single-process run, and the plan's
// per-rank parameter count is what a rank allocates.
#include <catch2/catch.hpp>

#include "weft/model.hpp"
#include "weft/parallel/partition.hpp"
#include "weft/parallel/plan.hpp"
#include "weft/parallel/tensor_parallel.hpp"
#include "weft/exec/tensor_parallel_step.hpp"
#include "weft/exec/training_step.hpp"

#include <algorithm>
#include <barrier>
#include <cmath>
#include <memory>
#include <thread>
#include <vector>

using namespace weft;

// ---- a user's layers and their tensor-parallel forms ----
// example-begin user-tp-layers
/// relu(x)² over rows of width F: elementwise, no parameters.
template <std::size_t F>
struct squared_relu : stateless_layer {
  static constexpr std::string_view structure_name = "squared_relu";
  static constexpr std::size_t in_width = F, out_width = F;
  template <std::size_t B, std::size_t S>
  static constexpr std::size_t kept_count = 0;
  template <std::size_t B, std::size_t S>
  static constexpr std::size_t scratch_count = 0;
  template <class Fr>
  static void forward(const Fr&, const typename Fr::value_type* in, typename Fr::value_type* out) {
    for (std::size_t i = 0; i < Fr::rows * F; ++i) out[i] = in[i] > 0 ? in[i] * in[i] : 0;
  }
  template <class Fr>
  static void backward(const Fr&, const typename Fr::value_type* in, const typename Fr::value_type* dout,
                       typename Fr::value_type* din) {
    for (std::size_t i = 0; i < Fr::rows * F; ++i) din[i] += in[i] > 0 ? 2 * in[i] * dout[i] : 0;
  }
};

/// out = x · g (a learned gain per channel): one replicated parameter.
template <std::size_t C>
struct channel_scale : leaf_layer<param_list<param<"gain", shape<axis<"width", C>>, role::replicated, init::ones>>> {
  static constexpr std::size_t in_width = C, out_width = C;
  template <std::size_t B, std::size_t S>
  static constexpr std::size_t kept_count = 0;
  template <std::size_t B, std::size_t S>
  static constexpr std::size_t scratch_count = 0;
  template <class Fr>
  static void forward(const Fr& f, const typename Fr::value_type* in, typename Fr::value_type* out) {
    for (std::size_t i = 0; i < Fr::rows * C; ++i) out[i] = in[i] * f.params[i % C];
  }
  template <class Fr>
  static void backward(const Fr& f, const typename Fr::value_type* in, const typename Fr::value_type* dout,
                       typename Fr::value_type* din) {
    for (std::size_t i = 0; i < Fr::rows * C; ++i) {
      din[i] += dout[i] * f.params[i % C];
      f.grads[i % C] += dout[i] * in[i];
    }
  }
};

// Inside a region (between a column- and a row-parallel linear) a rank holds F/TP of the
// hidden channels: an elementwise layer runs on those.
template <std::size_t F, std::size_t TP, bool SP, bool InRegion>
struct weft::tp_shard<squared_relu<F>, TP, SP, InRegion> {
  using type = squared_relu<(InRegion ? F / TP : F)>;
};
// Outside regions every rank holds whole rows (under SP: its slice of the sequence), so a
// replicated layer runs as it is; its role::replicated gain is summed over the group by the step.
template <std::size_t C, std::size_t TP, bool SP, bool InRegion>
struct weft::tp_shard<channel_scale<C>, TP, SP, InRegion> {
  static_assert(!InRegion, "channel_scale works on whole rows: put it outside column/row regions.");
  using type = channel_scale<C>;
};
// example-end user-tp-layers
static_assert(layer<squared_relu<8>> && layer<channel_scale<8>>);

namespace {

// A tensor-parallel group of threads: each collective publishes its buffer, meets the others
// at a barrier, reads all of them in rank order (so every rank gets the same sums), and meets
// again before anyone reuses a buffer.
struct thread_world {
  explicit thread_world(int n) : size(n), sync(n), slots(static_cast<std::size_t>(n)) {}
  int size;
  std::barrier<> sync;
  std::vector<const void*> slots;
};

class thread_tp_group final : public tp_group {
 public:
  thread_tp_group(thread_world& w, int rank) : w_(w), rank_(rank) {}
  int rank() const override { return rank_; }
  int size() const override { return w_.size; }
  void all_reduce_sum(float* d, std::size_t n) override { reduce(d, n, false); }
  void all_reduce_sum(double* d, std::size_t n) override { reduce(d, n, false); }
  void all_reduce_max(float* d, std::size_t n) override { reduce(d, n, true); }
  void all_reduce_max(double* d, std::size_t n) override { reduce(d, n, true); }
  void all_gather(const float* in, float* out, std::size_t n) override { gather(in, out, n); }
  void all_gather(const double* in, double* out, std::size_t n) override { gather(in, out, n); }
  void reduce_scatter_sum(const float* in, float* out, std::size_t n) override { scatter(in, out, n); }
  void reduce_scatter_sum(const double* in, double* out, std::size_t n) override { scatter(in, out, n); }

 private:
  template <class T>
  const T* slot(int r) const { return static_cast<const T*>(w_.slots[static_cast<std::size_t>(r)]); }
  template <class T>
  void reduce(T* d, std::size_t n, bool max) {
    w_.slots[static_cast<std::size_t>(rank_)] = d;
    w_.sync.arrive_and_wait();
    std::vector<T> acc(slot<T>(0), slot<T>(0) + n);
    for (int r = 1; r < w_.size; ++r)
      for (std::size_t i = 0; i < n; ++i) acc[i] = max ? std::max(acc[i], slot<T>(r)[i]) : acc[i] + slot<T>(r)[i];
    w_.sync.arrive_and_wait();
    std::copy(acc.begin(), acc.end(), d);
  }
  template <class T>
  void gather(const T* in, T* out, std::size_t n) {
    w_.slots[static_cast<std::size_t>(rank_)] = in;
    w_.sync.arrive_and_wait();
    for (int r = 0; r < w_.size; ++r) std::copy_n(slot<T>(r), n, out + static_cast<std::size_t>(r) * n);
    w_.sync.arrive_and_wait();
  }
  template <class T>
  void scatter(const T* in, T* out, std::size_t n) {
    w_.slots[static_cast<std::size_t>(rank_)] = in;
    w_.sync.arrive_and_wait();
    for (std::size_t i = 0; i < n; ++i) {
      T s = slot<T>(0)[static_cast<std::size_t>(rank_) * n + i];
      for (int r = 1; r < w_.size; ++r) s += slot<T>(r)[static_cast<std::size_t>(rank_) * n + i];
      out[i] = s;
    }
    w_.sync.arrive_and_wait();
  }
  thread_world& w_;
  int rank_;
};

std::int32_t token_at(std::size_t step, std::size_t micro, std::size_t i, std::size_t V) {
  std::uint64_t h = step * 1000003u + micro * 10007u + i;
  h ^= h >> 17, h *= 0xed5ad4bbu, h ^= h >> 11;
  return static_cast<std::int32_t>(h % V);
}
template <std::size_t V>
auto filler(std::size_t s) {
  return [s, i = std::size_t{0}](auto tok, auto tgt) mutable {
    for (std::size_t n = 0; n < tok.size(); ++n) {
      tok[n] = token_at(s, i, n, V);
      tgt[n] = token_at(s, i, n + 1, V);
    }
    ++i;
  };
}

train_options options() {
  train_options o;
  o.optimizer.lr = 1e-2f;
  o.grad_clip = 0.5f;
  o.grad_accum = 2;
  return o;
}

// Two threads run tensor_parallel_step<P, 2, SP> for `steps`; the result is compared with the
// single-process training_step<P>.
template <class Model, bool SP>
void check_tp2(std::size_t steps) {
  using P = plan<Model, batch<micro<2>, seq<8>>, precision<double>>;
  training_step<P> ref(options());
  std::vector<double> ref_loss, ref_norm;
  for (std::size_t s = 0; s < steps; ++s) {
    const auto m = ref.step(filler<Model::vocab_size>(s));
    ref_loss.push_back(m.loss);
    ref_norm.push_back(m.grad_norm);
  }
  thread_world w(2);
  std::vector<double> loss[2], norm[2];
  std::vector<double> whole(P::param_count);
  auto rank_main = [&](int r) {
    tensor_parallel_step<P, 2, SP> step(std::make_unique<thread_tp_group>(w, r), options());
    for (std::size_t s = 0; s < steps; ++s) {
      const auto m = step.step(filler<Model::vocab_size>(s));
      loss[r].push_back(m.loss);
      norm[r].push_back(m.grad_norm);
    }
    std::vector<double> g(P::param_count);
    step.gather_parameters(g);
    if (r == 0) whole = g;
  };
  std::thread t1(rank_main, 1);
  rank_main(0);
  t1.join();
  for (std::size_t s = 0; s < steps; ++s) {
    for (int r = 0; r < 2; ++r) {
      CHECK(loss[r][s] == Approx(ref_loss[s]).epsilon(1e-11));
      CHECK(norm[r][s] == Approx(ref_norm[s]).epsilon(1e-11));
    }
    CHECK(ref_norm[s] > 0.5);  // clipping is active
  }
  double worst = 0;
  for (std::size_t i = 0; i < whole.size(); ++i)
    worst = std::max(worst, std::abs(whole[i] - ref.params()[i]) / std::max(1e-3, std::abs(ref.params()[i])));
  CHECK(worst < 1e-9);
}


constexpr std::size_t V = 32, Ctx = 8, C = 16, H = 4, L = 2;

template <std::size_t Width>
using relu2_mlp = sequential<named<"c_fc", linear<Width, 4 * Width, role::column>>, squared_relu<4 * Width>,
                             named<"c_proj", linear<4 * Width, Width, role::row, true, init::normal_residual<20>>>>;

// GPT-J-style: parallel attention + MLP (a squared-ReLU one), a bias-free norm, a user's
// replicated gain before the untied head.
// example-begin parallel-lm
struct parallel_lm
    : sequential<named<"wte", token_embedding<V, C>>, named<"wpe", positional_embedding<Ctx, C>>,
                 named<"h", repeat<L, parallel_block<bias_free_layernorm<C>, attention<C, H>, relu2_mlp<C>>>>,
                 named<"ln_f", layernorm<C>>, named<"scale", channel_scale<C>>, named<"head", lm_head<V, C>>> {
  static constexpr std::size_t vocab_size = V, context_length = Ctx, depth = L, width = C, heads = H;
  static constexpr std::size_t lookup_param_count = V * C + Ctx * C;
};
// example-end parallel-lm

}  // namespace

TEST_CASE("a model of parallel blocks and user layers: per-rank plan equals the shard", "[parallel][tensor_parallel][user]") {
  STATIC_REQUIRE(model_partition<parallel_lm, 2>::whole.params.per_rank == tp_model<parallel_lm, 2>::param_count);
  STATIC_REQUIRE(model_partition<parallel_lm, 2>::whole.params.per_rank == tp_model<parallel_lm, 2, true>::param_count);
  STATIC_REQUIRE(model_partition<parallel_lm, 4>::whole.params.per_rank == tp_model<parallel_lm, 4>::param_count);
  STATIC_REQUIRE(tp_model<parallel_lm, 2>::param_count < parallel_lm::param_count);
}

TEST_CASE("a model of parallel blocks and user layers: tp 2 reproduces one process", "[parallel][tensor_parallel][user]") {
  SECTION("tp 2") { check_tp2<parallel_lm, false>(3); }
  SECTION("tp 2 + sequence parallel") { check_tp2<parallel_lm, true>(3); }
}

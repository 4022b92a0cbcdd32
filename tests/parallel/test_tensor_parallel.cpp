// Tensor parallelism without MPI: shard maps, the transform's shapes, and TP=2 (with and
// without sequence parallelism) on two threads against the single-process step.
// The MPI equivalence tests (tests/mpi/tp_equivalence.cpp) run the same on processes.
#include <catch2/catch.hpp>

#include "weft/comm/single.hpp"
#include "weft/model/gpt.hpp"
#include "weft/model/llama.hpp"
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

namespace {

using gpt_t = gpt<gpt_config<vocab<32>, context<8>, width<16>, heads<2>, depth<2>>>;
using llama_t = llama<llama_config<vocab<32>, context<8>, width<16>, heads<4>, kv_heads<2>, depth<2>, ffn<24>>>;

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

}  // namespace

TEST_CASE("shard maps cut packed segments separately", "[parallel][tensor_parallel]") {
  param_info qkv;  // (q 4 | k 2 | v 2, in 3), column
  qkv.name = "w";
  qkv.shape = {8, 3};
  qkv.size = 24;
  qkv.tp_role = role::column;
  qkv.segments = {4, 2, 2};
  const auto r1 = shard_indices(qkv, 2, 1);  // rows q 2,3 | k 5 | v 7
  const std::vector<std::size_t> rows{2, 3, 5, 7};
  REQUIRE(r1.size() == 12);
  for (std::size_t i = 0; i < 4; ++i)
    for (std::size_t c = 0; c < 3; ++c) CHECK(r1[i * 3 + c] == rows[i] * 3 + c);

  param_info row = qkv;  // (out 2, in 4), row: rank 1 holds in 2..3
  row.shape = {2, 4};
  row.size = 8;
  row.tp_role = role::row;
  row.segments.clear();
  CHECK(shard_indices(row, 2, 1) == std::vector<std::size_t>{2, 3, 6, 7});

  param_info vocab_table = row;  // (vocab 4, width 2): rank 1 holds tokens 2, 3
  vocab_table.shape = {4, 2};
  vocab_table.tp_role = role::vocab;
  CHECK(shard_indices(vocab_table, 2, 1) == std::vector<std::size_t>{4, 5, 6, 7});

  param_info norm = row;
  norm.tp_role = role::replicated;
  CHECK(shard_indices(norm, 2, 1).size() == 8);
  qkv.segments = {3, 3, 2};
  CHECK_THROWS_AS(shard_indices(qkv, 2, 0), std::invalid_argument);
}

TEST_CASE("tp_model keeps the names and cuts the shapes", "[parallel][tensor_parallel]") {
  using P = plan<llama_t, batch<micro<2>, seq<8>>, precision<double>>;
  using L = tensor_parallel_plan<P, 2, true>;
  const auto local = L::parameters();
  const auto whole = P::parameters();
  REQUIRE(local.size() == whole.size());
  std::size_t shards = 0, replicated = 0;
  for (std::size_t i = 0; i < local.size(); ++i) {
    CHECK(local[i].name == whole[i].name);
    CHECK(local[i].tp_role == whole[i].tp_role);
    if (whole[i].tp_role == role::replicated) {
      CHECK(local[i].size == whole[i].size);
      replicated += whole[i].size;
    } else {
      CHECK(local[i].size * 2 == whole[i].size);
      shards += whole[i].size;
    }
  }
  CHECK(L::param_count == shards / 2 + replicated);
  CHECK(L::local_seq == 4);
  CHECK(L::logits_count == 16 * 16);
  // The attention core of one rank: heads 4/2, kv heads 2/2.
  using block = typename L::model::template child<1>::inner::block_type;
  using attn = typename block::template child<0>::inner::template child<1>::inner;  // tp_region<sequential<...>>
  STATIC_REQUIRE(std::is_same_v<typename attn::inner::template child<1>, causal_attention<2, 1, 4, rope>>);
}

TEST_CASE("a tp group of one is the single-process step", "[parallel][tensor_parallel]") {
  using P = plan<gpt_t, batch<micro<2>, seq<8>>, precision<double>>;
  training_step<P> ref(options());
  tensor_parallel_step<P, 1, true> one(single_world{}, options());
  REQUIRE(std::equal(ref.params().begin(), ref.params().end(), one.params().begin()));
  for (std::size_t s = 0; s < 2; ++s) {
    const auto a = ref.step(filler<32>(s));
    const auto b = one.step(filler<32>(s));
    CHECK(b.loss == Approx(a.loss).epsilon(1e-12));
    CHECK(b.grad_norm == Approx(a.grad_norm).epsilon(1e-12));
  }
}

TEST_CASE("tensor parallelism on two threads reproduces one process", "[parallel][tensor_parallel]") {
  SECTION("gpt, tp 2") { check_tp2<gpt_t, false>(3); }
  SECTION("gpt, tp 2 + sequence parallel") { check_tp2<gpt_t, true>(3); }
  SECTION("llama, tp 2") { check_tp2<llama_t, false>(3); }
  SECTION("llama, tp 2 + sequence parallel") { check_tp2<llama_t, true>(3); }
}

TEST_CASE("tp and sequence parallelism come from the plan's strategy", "[parallel][tensor_parallel]") {
  using ps = plan<gpt_t, batch<micro<2>, seq<8>>,
                  strategy<mesh<axis<"dp">, axis<"tp", 2>>, tensor_parallel<"tp", sequence_parallel>>, precision<double>>;
  STATIC_REQUIRE(std::is_same_v<tensor_parallel_step<ps>::local_plan, tensor_parallel_plan<ps, 2, true>>);
  STATIC_REQUIRE(tensor_parallel_plan<ps>::local_seq == 4);
  using pd = plan<gpt_t, batch<micro<2>, seq<8>>, strategy<mesh<axis<"dp">>>>;
  STATIC_REQUIRE(tensor_parallel_plan<pd>::tp == 1 && !tensor_parallel_plan<pd>::sequence_parallel);
}

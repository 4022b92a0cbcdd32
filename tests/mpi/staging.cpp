// staging_communicator (comm/staging.hpp) under mpirun, with host_copier standing in for the
// device copies: every operation through the staging communicator gives exactly what the
// wrapped MPI communicator gives on the same inputs, the staging copies really happen (the
// copier's byte counters), and whole training steps of several strategies through it are bit
// for bit those through MPI directly. On a GPU the same class with the CUDA copier lets
// several processes share one device (NCCL refuses two ranks on one GPU).
//   mpirun -np N mpi_staging [ops|steps]
#include "mpi_check.hpp"  // WEFT_CHECK, finish

#include <weft/comm/mpi.hpp>
#include <weft/comm/staging.hpp>
#include <weft/model.hpp>
#include <weft/parallel.hpp>
#include <weft/exec/distributed_step.hpp>

#include <cstdint>
#include <cstdio>
#include <numeric>
#include <string>
#include <vector>

using namespace weft;
using staged = staging_communicator<mpi_communicator, host_copier>;
static_assert(communicator<staged>);

namespace {

template <class T>
std::vector<T> values(std::size_t n, int rank, int salt) {
  std::vector<T> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<T>((static_cast<int>(i) * 7 + rank * 13 + salt) % 23) / T(4);
  return v;
}

template <class T>
void ops_of(mpi_communicator& world, staged& st) {
  const int r = world.rank(), n = world.size();
  const auto un = static_cast<std::size_t>(n);
  {  // all_reduce, sum and max
    auto a = values<T>(37, r, 1), b = a;
    world.all_reduce(std::span<T>(a), reduce_op::sum);
    st.all_reduce(std::span<T>(b), reduce_op::sum);
    WEFT_CHECK(a == b);
    world.all_reduce(std::span<T>(a), reduce_op::max);
    st.all_reduce(std::span<T>(b), reduce_op::max);
    WEFT_CHECK(a == b);
  }
  {  // reduce_scatter, all_gather
    auto in = values<T>(5 * un, r, 2);
    std::vector<T> a(5), b(5);
    world.reduce_scatter(std::span<const T>(in), std::span<T>(a));
    st.reduce_scatter(std::span<const T>(in), std::span<T>(b));
    WEFT_CHECK(a == b);
    std::vector<T> ga(5 * un), gb(5 * un);
    world.all_gather(std::span<const T>(a), std::span<T>(ga));
    st.all_gather(std::span<const T>(b), std::span<T>(gb));
    WEFT_CHECK(ga == gb);
  }
  {  // uneven forms
    std::vector<int> counts(un);
    for (int q = 0; q < n; ++q) counts[static_cast<std::size_t>(q)] = 3 + q;
    const auto total = static_cast<std::size_t>(std::accumulate(counts.begin(), counts.end(), 0));
    const auto mine = static_cast<std::size_t>(counts[static_cast<std::size_t>(r)]);
    auto in = values<T>(total, r, 3);
    std::vector<T> a(mine), b(mine);
    world.reduce_scatter_v(std::span<const T>(in), std::span<T>(a), counts);
    st.reduce_scatter_v(std::span<const T>(in), std::span<T>(b), counts);
    WEFT_CHECK(a == b);
    std::vector<T> ga(total), gb(total);
    world.all_gather_v(std::span<const T>(a), std::span<T>(ga), counts);
    st.all_gather_v(std::span<const T>(b), std::span<T>(gb), counts);
    WEFT_CHECK(ga == gb);
  }
  {  // all_to_all, broadcast
    auto in = values<T>(4 * un, r, 4);
    std::vector<T> a(4 * un), b(4 * un);
    world.all_to_all(std::span<const T>(in), std::span<T>(a));
    st.all_to_all(std::span<const T>(in), std::span<T>(b));
    WEFT_CHECK(a == b);
    auto x = values<T>(11, r, 5), y = x;
    world.broadcast(std::span<T>(x), n - 1);
    st.broadcast(std::span<T>(y), n - 1);
    WEFT_CHECK(x == y);
  }
  {  // a ring of blocking and of non-blocking messages
    const int next = (r + 1) % n, prev = (r + n - 1) % n;
    auto out = values<T>(9, r, 6);
    std::vector<T> got(9), want = values<T>(9, prev, 6);
    {
      auto rq = st.irecv(std::span<T>(got), prev, 7);
      auto sq = st.isend(std::span<const T>(out), next, 7);
      sq.wait();
      rq.wait();
    }
    WEFT_CHECK(got == want);
    std::vector<T> got2(9);
    if (r % 2 == 0) {
      st.send(std::span<const T>(out), next, 8);
      st.recv(std::span<T>(got2), prev, 8);
    } else {
      std::vector<T> tmp(9);
      st.recv(std::span<T>(tmp), prev, 8);
      st.send(std::span<const T>(out), next, 8);
      got2 = tmp;
    }
    WEFT_CHECK(got2 == want);
  }
  {  // non-blocking all_reduce: the result arrives in the caller's buffer at wait()
    auto a = values<T>(29, r, 9), b = a;
    world.all_reduce(std::span<T>(a), reduce_op::sum);
    auto q = st.iall_reduce(std::span<T>(b), reduce_op::sum);
    q.wait();
    WEFT_CHECK(a == b);
  }
}

void check_ops(mpi_communicator& world) {
  staged st(world);
  ops_of<float>(world, st);
  ops_of<double>(world, st);
  ops_of<std::int32_t>(world, st);
  // Every operation went through host staging, both ways.
  WEFT_CHECK(st.copier().counts().to_host_bytes > 0);
  WEFT_CHECK(st.copier().counts().to_device_bytes > 0);
  // A split keeps staging (and shares the copier's counters).
  auto half = st.split(world.rank() % 2, world.rank());
  const auto before = st.copier().counts().copies;
  std::vector<double> v{1.0};
  half.all_reduce(std::span<double>(v), reduce_op::sum);
  WEFT_CHECK(v[0] == static_cast<double>(half.size()));
  WEFT_CHECK(st.copier().counts().copies == before + 2);
}

// ---- whole steps: the same strategy through MPI and through staging, bit for bit ----
using model_t = gpt<gpt_config<vocab<32>, context<8>, width<16>, heads<4>, depth<4>>>;
template <class Strategy>
using plan_of = plan<model_t, batch<micro<2>, seq<8>>, precision<double>, Strategy>;

template <class Plan>
void steps_of(mpi_communicator& world, const char* name) {
  train_options o;
  o.optimizer.lr = 1e-2f;
  o.grad_clip = 0.5f;
  auto direct = make_training_step<Plan>(world, o);
  // example-begin staging
  staged st(world);                                // staging_communicator<mpi_communicator, host_copier>
  auto through = make_training_step<Plan>(st, o);  // any strategy, unchanged
  // example-end staging
  const std::size_t row0 = direct.data_rank() * 2;
  for (std::size_t s = 0; s < 3; ++s) {
    auto fill = [&](auto tok, auto tgt) {
      for (std::size_t i = 0; i < tok.size(); ++i) {
        tok[i] = static_cast<std::int32_t>((s * 31 + (row0 * 8 + i) * 7) % 32);
        tgt[i] = static_cast<std::int32_t>((s * 17 + (row0 * 8 + i) * 5 + 1) % 32);
      }
    };
    const auto a = direct.step(fill);
    const auto b = through.step(fill);
    WEFT_CHECK(a.loss == b.loss);
    WEFT_CHECK(a.grad_norm == b.grad_norm);
  }
  WEFT_CHECK(st.copier().counts().to_host_bytes > 0);
  if (world.rank() == 0) std::printf("%s: 3 steps through staging equal to MPI directly\n", name);
}

void check_steps(mpi_communicator& world) {
  steps_of<plan_of<strategy<mesh<axis<"dp">>, data_parallel<"dp", zero<1>>>>>(world, "zero1");
  steps_of<plan_of<strategy<mesh<axis<"dp">>, data_parallel<"dp", zero<3>>>>>(world, "zero3");
  if (world.size() % 2 == 0) {
    steps_of<plan_of<strategy<mesh<axis<"dp">, axis<"tp", 2>>, tensor_parallel<"tp">>>>(world, "tp2");
    steps_of<plan_of<strategy<mesh<axis<"dp">, axis<"pp", 2>>, pipeline<"pp", one_f_one_b, microbatches<4>>>>>(
        world, "pp2-1f1b");
  }
}

}  // namespace

int main(int argc, char** argv) {
  auto world = mpi::world(argc, argv);
  test::world_rank = world.rank();
  const std::string what = argc > 1 ? argv[1] : "";
  test::require_args(world, argc == 2 && test::one_of(what, {"ops", "steps"}), "mpi_staging: usage: ops|steps", argc,
                     argv);
  if (what == "ops") check_ops(world);
  else check_steps(world);
  return test::finish(world, ("mpi_staging " + what).c_str());
}

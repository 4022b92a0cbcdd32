// Expert parallelism of a mixture of experts (model/moe_expert_parallel.hpp) reproduces the
// single process, under mpirun. The world is an ep x dp grid (ep = the first argument, dp = the
// rest of the world): ep ranks share out the experts and exchange tokens with all_to_all_v;
// every rank brings its own micro-batch of tokens. The reference, on every rank (the layer is
// tiny), runs the whole moe_mlp over each world rank's micro-batch in turn and sums the
// gradients. Per step: this rank's output and input gradient equal the reference's for its
// micro-batch; the router's and the shared expert's gradients summed over the world, and this
// rank's experts' gradients summed over dp only, equal the reference's; the load-balancing
// loss equals the reference's for the micro-batch; then both take the same SGD step.
//   mpirun -np N mpi_ep_equivalence <ep> [steps]
#include "mpi_check.hpp"  // WEFT_CHECK, finish

#include <weft/comm/expert_group_adapter.hpp>
#include <weft/comm/mpi.hpp>
#include <weft/model/mlp.hpp>
#include <weft/model/moe.hpp>
#include <weft/model/moe_expert_parallel.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <span>
#include <string>
#include <vector>

using namespace weft;

constexpr std::size_t B = 2, S = 3, C = 8;
using moe_t = moe_mlp<C, 4, 2, 6, swiglu_experts, shared_expert<swiglu_mlp<C, 5>>, aux_loss_weight<1, 10>>;

namespace {

std::vector<double> random_vector(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 g(seed);
  std::uniform_real_distribution<double> u(-1, 1);
  std::vector<double> v(n);
  for (auto& x : v) x = u(g);
  return v;
}

// A frame over vectors for one layer type L (kept and workspace NaN: a read before write shows).
template <class L>
struct buffers {
  std::vector<double> kept = std::vector<double>(L::template kept_count<B, S>, std::nan(""));
  std::vector<double> scratch = std::vector<double>(L::template scratch_count<B, S> + 1, std::nan(""));
  frame<double, B, S, L> at(std::vector<double>& params, std::vector<double>& grads) {
    frame<double, B, S, L> f;
    f.params = f.root_params = params.data();
    f.grads = f.root_grads = grads.data();
    f.kept = kept.data();
    f.scratch = scratch.data();
    return f;
  }
};

double rel_err(const double* a, const double* b, std::size_t n) {
  double d = 0, r = 0;
  for (std::size_t i = 0; i < n; ++i) d = std::max(d, std::abs(a[i] - b[i])), r = std::max(r, std::abs(b[i]));
  return d / std::max(r, 1e-300);
}

template <std::size_t EP>
int run(mpi_communicator& world, std::size_t steps) {
  using ep_t = moe_expert_parallel<moe_t, EP>;
  const int w = world.rank(), np = world.size();
  const int ep_rank = w % static_cast<int>(EP), dp_rank = w / static_cast<int>(EP);
  mpi_communicator ep_comm = world.split(dp_rank, ep_rank);  // ranks with the same dp index
  mpi_communicator dp_comm = world.split(ep_rank, dp_rank);  // ranks with the same ep index
  expert_group_adapter<mpi_communicator> group(ep_comm);
  const auto r = static_cast<std::size_t>(ep_rank);
  constexpr double tol = 1e-10;

  // the whole layer's parameters (identical on every rank) and this rank's shard of them
  std::vector<double> full = random_vector(moe_t::param_count, 7);
  std::vector<double> local(ep_t::param_count);
  auto shard = [&] {
    std::copy_n(full.begin() + moe_t::gate_offset, C * moe_t::experts, local.begin() + ep_t::gate_offset);
    std::copy_n(full.begin() + static_cast<std::ptrdiff_t>(ep_t::full_w1_offset(r)), ep_t::w1_size, local.begin() + ep_t::w1_offset);
    std::copy_n(full.begin() + static_cast<std::ptrdiff_t>(ep_t::full_w2_offset(r)), ep_t::w2_size, local.begin() + ep_t::w2_offset);
    std::copy_n(full.begin() + moe_t::own_param_count, moe_t::shared_type::param_count, local.begin() + ep_t::own_param_count);
  };
  shard();

  for (std::size_t step = 0; step < steps; ++step) {
    // ---- reference: every world rank's micro-batch through the whole layer, gradients summed ----
    std::vector<double> ref_grads(moe_t::param_count, 0.0), ref_out, ref_din;
    double ref_aux = 0;
    for (int q = 0; q < np; ++q) {
      const auto x = random_vector(B * S * C, 1000 * step + 100 + static_cast<std::uint64_t>(q));
      const auto dout = random_vector(B * S * C, 1000 * step + 500 + static_cast<std::uint64_t>(q));
      buffers<moe_t> buf;
      std::vector<double> out(B * S * C), din(B * S * C, 0.0);
      const auto f = buf.at(full, ref_grads);
      moe_t::forward(f, x.data(), out.data());
      aux_losses().take();
      moe_t::backward(f, x.data(), dout.data(), din.data());
      const double aux = aux_losses().take().sum;
      if (q == w) ref_out = out, ref_din = din, ref_aux = aux;
    }
    // ---- expert parallel: this rank's micro-batch ----
    const auto x = random_vector(B * S * C, 1000 * step + 100 + static_cast<std::uint64_t>(w));
    const auto dout = random_vector(B * S * C, 1000 * step + 500 + static_cast<std::uint64_t>(w));
    buffers<ep_t> buf;
    std::vector<double> grads(ep_t::param_count, 0.0), out(B * S * C), din(B * S * C, 0.0);
    const auto f = buf.at(local, grads);
    ep_t::forward(f, group, x.data(), out.data());
    aux_losses().take();
    ep_t::backward(f, group, x.data(), dout.data(), din.data());
    const double aux = aux_losses().take().sum;
    // router and shared expert: summed over the world; this rank's experts: over dp
    world.all_reduce(std::span<double>(grads.data() + ep_t::gate_offset, C * moe_t::experts), reduce_op::sum);
    world.all_reduce(std::span<double>(grads.data() + ep_t::own_param_count, moe_t::shared_type::param_count), reduce_op::sum);
    dp_comm.all_reduce(std::span<double>(grads.data() + ep_t::w1_offset, ep_t::w1_size + ep_t::w2_size), reduce_op::sum);

    const double e_out = rel_err(out.data(), ref_out.data(), out.size());
    const double e_din = rel_err(din.data(), ref_din.data(), din.size());
    const double e_gate = rel_err(grads.data() + ep_t::gate_offset, ref_grads.data() + moe_t::gate_offset, C * moe_t::experts);
    const double e_w1 = rel_err(grads.data() + ep_t::w1_offset, ref_grads.data() + ep_t::full_w1_offset(r), ep_t::w1_size);
    const double e_w2 = rel_err(grads.data() + ep_t::w2_offset, ref_grads.data() + ep_t::full_w2_offset(r), ep_t::w2_size);
    const double e_sh = rel_err(grads.data() + ep_t::own_param_count, ref_grads.data() + moe_t::own_param_count,
                                moe_t::shared_type::param_count);
    const double e_aux = std::abs(aux - ref_aux) / std::abs(ref_aux);
    double worst[1] = {std::max({e_out, e_din, e_gate, e_w1, e_w2, e_sh, e_aux})};
    world.all_reduce(std::span<double>(worst), reduce_op::max);
    if (w == 0)
      std::printf("ep%zu x dp%d step %zu: worst relative error %.3g (output %.2g, input grad %.2g, router %.2g, "
                  "experts %.2g/%.2g, shared %.2g, aux %.2g on rank 0)\n",
                  EP, np / static_cast<int>(EP), step, worst[0], e_out, e_din, e_gate, e_w1, e_w2, e_sh, e_aux);
    WEFT_CHECK(e_out <= tol);
    WEFT_CHECK(e_din <= tol);
    WEFT_CHECK(e_gate <= tol);
    WEFT_CHECK(e_w1 <= tol);
    WEFT_CHECK(e_w2 <= tol);
    WEFT_CHECK(e_sh <= tol);
    WEFT_CHECK(e_aux <= tol);

    // ---- the same SGD step on both (the reference's whole gradient; this rank's shard of it) ----
    for (std::size_t i = 0; i < full.size(); ++i) full[i] -= 0.05 * ref_grads[i];
    for (std::size_t i = 0; i < local.size(); ++i) local[i] -= 0.05 * grads[i];
    std::vector<double> expect(ep_t::param_count);
    std::swap(expect, local);
    shard();  // local = shard of the updated reference
    WEFT_CHECK(rel_err(expect.data(), local.data(), local.size()) <= tol);
    local = expect;  // keep going from the expert-parallel parameters
  }
  return test::finish(world, "ep_equivalence");
}

}  // namespace

int main(int argc, char** argv) {
  auto world = mpi::world(argc, argv);
  test::world_rank = world.rank();
  const int ep = argc > 1 ? std::atoi(argv[1]) : 2;
  const std::size_t steps = argc > 2 ? static_cast<std::size_t>(std::atoi(argv[2])) : 3;
  if (argc > 3 || (ep != 1 && ep != 2 && ep != 4) || world.size() % ep != 0) {
    if (world.rank() == 0)
      std::fprintf(stderr, "usage: mpirun -np N mpi_ep_equivalence <ep: 1, 2 or 4 dividing N> [steps]\n");
    return 2;
  }
  if (ep == 1) return run<1>(world, steps);
  if (ep == 2) return run<2>(world, steps);
  return run<4>(world, steps);
}

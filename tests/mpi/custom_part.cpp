// A strategy part written outside the library: the strategy, the rank layout, the groups and the
// local step take it without an edit of weft (issue #12: no closed lists). The part,
// `replica_parallel<Axis>`, is a second data-parallel axis built by hand: every index along it
// reads its own rows (splits_data), and its local-step wrapper scales each micro-batch by 1/n and
// sums the gradients over its group before data_parallel_step hears that they are final. So a
// plan over dp × rp (× tp, or × pp) must train exactly like one process that accumulates every
// rank's micro-batches. Under mpirun each rank compares every step's loss and gradient norm with
// that reference (f64, 1e-10), and checks its coordinates, its group and its data shard.
//   mpirun -np N mpi_custom_part <rp2|rp2-dp|rp2-tp2|rp2-pp2|rp2-tp2-dp-zero2> [steps]
#include "mpi_check.hpp"  // WEFT_CHECK, finish

#include <weft/comm/mpi.hpp>
#include <weft/exec/distributed_step.hpp>
#include <weft/exec/local_step_wrapper.hpp>
#include <weft/model.hpp>
#include <weft/ops/fill.hpp>
#include <weft/parallel.hpp>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>

using namespace weft;

// example-begin custom-part
// The wrapper: the local-step interface forwarded by local_step_wrapper; what changes is here.
template <class Local, class Comm>
class replica_local : public local_step_wrapper<Local> {
  using base = local_step_wrapper<Local>;
  using base::local_;

 public:
  replica_local(Comm& group, Local&& local)
      : base(std::move(local)), group_(&group), n_(static_cast<std::size_t>(group.size())),
        r_(static_cast<std::size_t>(group.rank())) {}
  replica_local(replica_local&&) noexcept = default;

  std::size_t replicas() const { return n_; }
  // data_parallel_step hears "final" only after the sum over the group.
  void set_grad_ready(grad_ready_hook hook) { ready_ = hook; }

  // One micro-batch: 1/n of the scale, then the group's sum (rank 0 alone carries the earlier
  // micro-batches' sum, so that nothing is counted twice).
  template <class Scale>
  double accumulate(Scale scale) {
    auto g = local_.grads();
    if (r_ != 0) ops::zero(local_.context(), g.data(), g.size());
    const double loss = local_.accumulate(static_cast<Scale>(scale / static_cast<Scale>(n_)));
    sum_gradients();
    if (ready_) ready_(0);  // every gradient is final
    return mean(loss);
  }
  // A pipeline's step (its micro-batches run by its schedule, `replicas` · n ranks in all).
  template <class Fill>
    requires base::own_schedule
  double forward_backward(Fill&& fill, std::size_t replicas) {
    const double loss = local_.forward_backward(fill, replicas * n_);
    sum_gradients();
    return mean(loss);
  }
  template <class Fill>
  double evaluate(Fill&& fill, std::size_t batches) {
    return mean(local_.evaluate(fill, batches));
  }

 private:
  void sum_gradients() { group_->all_reduce(local_.grads(), reduce_op::sum); }
  double mean(double x) {
    double v[1] = {x};
    group_->all_reduce(std::span<double>(v), reduce_op::sum);
    return v[0] / static_cast<double>(n_);
  }
  Comm* group_;
  std::size_t n_, r_;
  grad_ready_hook ready_{};
};

// The part: the four members of the protocol and one hook.
template <fixed_string Axis>
struct replica_parallel {
  using weft_part_tag = void;
  static constexpr fixed_string family = "replica_parallel";
  static constexpr auto axis_name = Axis;
  static constexpr std::size_t rank_order = 250;  // between expert (200) and data (300) parallelism
  static constexpr bool splits_data = true;       // each index reads its own rows
  template <class Local, class Comm>
  using local_step = replica_local<Local, Comm>;
};
// example-end custom-part

namespace {
using model_t = gpt<gpt_config<vocab<32>, context<8>, width<16>, heads<4>, depth<4>>>;
constexpr std::size_t B = 2, S = 8;
constexpr std::size_t K = 2;  // micro-batches per step without a pipeline

std::int32_t token_at(std::size_t step, std::size_t micro, std::size_t row, std::size_t pos) {
  std::uint64_t h = step * 1000003u + micro * 10007u + row * 101u + pos;
  h ^= h >> 17, h *= 0xed5ad4bbu, h ^= h >> 11;
  return static_cast<std::int32_t>(h % 32);
}

template <class Strategy>
void run(mpi_communicator& world, const std::string& name, std::size_t steps) {
  using P = plan<model_t, batch<micro<B>, seq<S>>, precision<double>, Strategy>;
  using R = plan<model_t, batch<micro<B>, seq<S>>, precision<double>>;
  static_assert(P::strategy_type::valid && P::strategy_type::template degree_of<"replica_parallel"> == 2);
  static_assert(!P::wants_windowed_grads && !P::wants_windowed_params);  // the wrapper reads gradients whole
  train_options o;
  o.optimizer.lr = 1e-2f;
  o.schedule = {2, steps, 0.1f};
  o.grad_clip = 0.5f;  // small enough to clip: the norm must be right
  constexpr std::size_t k = P::pp > 1 ? P::strategy_type::microbatches : K;
  if constexpr (P::pp == 1) o.grad_accum = K;
  auto step = make_training_step<P>(world, o);
  using local = typename decltype(step)::local_step;
  static_assert(std::is_same_v<local, replica_local<typename decltype(step)::model_parallel_step, mpi_communicator>>);

  // The rank layout: tp fastest, then rp (rank_order 250), then dp, then pp.
  const std::size_t w = static_cast<std::size_t>(world.rank()), dp = step.dp_size(), tp = P::tp, rp = 2;
  const rank_coords c = step.coords();
  WEFT_CHECK(c.tp() == w % tp && c["replica_parallel"] == (w / tp) % rp && c.dp() == (w / (tp * rp)) % dp &&
             c.pp() == w / (tp * rp * dp));
  WEFT_CHECK(Strategy::rank_of(c, dp) == w);
  WEFT_CHECK(step.data_shards() == dp * rp && step.data_rank() == c.dp() * rp + c["replica_parallel"]);
  mpi_communicator* group = step.group_of("replica_parallel");
  WEFT_CHECK(group != nullptr && group->size() == 2 && static_cast<std::size_t>(group->rank()) == c["replica_parallel"]);
  WEFT_CHECK(step.inner().local().replicas() == 2);

  const std::size_t shards = step.data_shards(), row0 = step.data_rank() * B;
  train_options ro = o;
  ro.grad_accum = k * shards;  // the reference sees every shard's micro-batches
  training_step<R> ref(ro);
  for (std::size_t s = 0; s < steps; ++s) {
    std::size_t i = 0;
    const auto md = step.step([&](auto tok, auto tgt) {
      for (std::size_t b = 0; b < B; ++b)
        for (std::size_t t = 0; t < S; ++t) {
          tok[b * S + t] = token_at(s, i, row0 + b, t);
          tgt[b * S + t] = token_at(s, i, row0 + b, t + 1);
        }
      ++i;
    });
    std::size_t j = 0;
    const auto mr = ref.step([&](auto tok, auto tgt) {  // micro j = shard j / k's micro j % k
      const std::size_t r = j / k, mi = j % k;
      for (std::size_t b = 0; b < B; ++b)
        for (std::size_t t = 0; t < S; ++t) {
          tok[b * S + t] = token_at(s, mi, r * B + b, t);
          tgt[b * S + t] = token_at(s, mi, r * B + b, t + 1);
        }
      ++j;
    });
    const bool loss_ok = std::abs(md.loss - mr.loss) <= 1e-10 * std::abs(mr.loss);
    const bool norm_ok = std::abs(md.grad_norm - mr.grad_norm) <= 1e-10 * mr.grad_norm;
    WEFT_CHECK(loss_ok && norm_ok && std::isfinite(md.loss));
    if (!loss_ok || !norm_ok)
      std::fprintf(stderr, "rank %d step %zu: loss %.17g vs %.17g, grad norm %.17g vs %.17g\n", world.rank(), s,
                   md.loss, mr.loss, md.grad_norm, mr.grad_norm);
  }
  if (world.rank() == 0)
    std::printf("%s: %d ranks = dp %zu x rp 2 x tp %zu x pp %zu, %zu steps compared with one process (1e-10)\n",
                name.c_str(), world.size(), dp, P::tp, P::pp, steps);
}

}  // namespace

// A part that wraps the local step reads its gradient block whole, so under ZeRO-2 the tp shard
// keeps its block stack whole (no layer-by-layer windows), and the plan's memory says so.
using rp2_tp2_dp_zero2 = strategy<mesh<axis<"dp">, axis<"rp", 2>, axis<"tp", 2>>, replica_parallel<"rp">,
                                  tensor_parallel<"tp">, data_parallel<"dp", zero<2>>>;
static_assert(rp2_tp2_dp_zero2::wraps_local_step);
static_assert(!strategy<mesh<axis<"dp">, axis<"tp", 2>>, tensor_parallel<"tp">, data_parallel<"dp", zero<2>>>::wraps_local_step);

int main(int argc, char** argv) {
  auto world = mpi::world(argc, argv);
  test::world_rank = world.rank();
  const std::string p = argc > 1 ? argv[1] : "";
  char* end = nullptr;
  const std::size_t steps = argc > 2 ? std::strtoul(argv[2], &end, 10) : 3;
  const bool args_ok = argc >= 2 && argc <= 3 && (argc == 2 || (*end == '\0' && steps > 0));
  collective_check(world, args_ok, "custom_part: usage: <preset> [steps > 0]", 2);
  bool known = true;
  if (p == "rp2") run<strategy<mesh<axis<"rp", 2>>, replica_parallel<"rp">>>(world, p, steps);
  else if (p == "rp2-dp")
    run<strategy<mesh<axis<"dp">, axis<"rp", 2>>, replica_parallel<"rp">, data_parallel<"dp">>>(world, p, steps);
  else if (p == "rp2-tp2")
    run<strategy<mesh<axis<"rp", 2>, axis<"tp", 2>>, replica_parallel<"rp">, tensor_parallel<"tp">>>(world, p, steps);
  else if (p == "rp2-pp2")
    run<strategy<mesh<axis<"rp", 2>, axis<"pp", 2>>, replica_parallel<"rp">, pipeline<"pp", microbatches<2>>>>(world, p,
                                                                                                             steps);
  else if (p == "rp2-tp2-dp-zero2")
    run<rp2_tp2_dp_zero2>(world, p, steps);
  else known = false;
  collective_check(world, known, "custom_part: unknown preset '" + p + "' (rp2 rp2-dp rp2-tp2 rp2-pp2 rp2-tp2-dp-zero2)", 2);
  return test::finish(world, ("custom_part " + p).c_str());
}

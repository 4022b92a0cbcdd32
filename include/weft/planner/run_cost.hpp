#pragma once
// ---- the whole run: throughput, time, cost, failures and checkpoints ----
//   tokens/s     = B·s / step                        MFU = model FLOPs/s / (N · peak)
//   train time   T = D / (tokens/s)                  GPU-hours = N · wall / 3600
// Failures: a job on n nodes, each failing λ times per day, has MTBF M = 1 day / (n·λ).
// A checkpoint (16-bit parameters and f32 optimizer state, written by all nodes at once)
// takes δ = bytes / (n · checkpoint_bandwidth). Young (1974) / Daly (2006): the interval
// that minimises lost work is τ = sqrt(2·δ·M). Per unit of wall time the job spends δ/τ
// writing checkpoints and, per failure (1/M of them), τ/2 of lost work plus the restart R:
//   wall = T / (1 − δ/τ − (τ/2 + R)/M),   interruptions = wall / M.
#include "weft/planner/cluster.hpp"     // cluster
#include "weft/planner/model_desc.hpp"  // model_desc, precision_desc
#include "weft/planner/step_cost.hpp"   // step_cost

#include <cstddef>

namespace weft::planner {

namespace detail {
// sqrt by Newton's method (std::sqrt is not constexpr in C++20).
constexpr double sqrt_newton(double x) noexcept {
  if (x <= 0) return 0;
  double r = x >= 1 ? x : 1;
  for (int i = 0; i < 200; ++i) {
    const double n = 0.5 * (r + x / r);
    if (n == r) break;
    r = n;
  }
  return r;
}
}  // namespace detail

/// Young/Daly's checkpoint interval for write time `delta` and MTBF `mtbf` (seconds).
constexpr double young_daly_interval(double delta, double mtbf) noexcept { return detail::sqrt_newton(2 * delta * mtbf); }

/// The run-level prediction.
struct run_cost {
  double tokens_per_second = 0;
  double mfu = 0;                  ///< model FLOPs utilisation
  double hfu = 0;                  ///< hardware FLOPs utilisation (recomputation counted)
  double flops_per_gpu = 0;        ///< hardware FLOP/s achieved per GPU
  double train_seconds = 0;        ///< computing only
  double wall_seconds = 0;         ///< with checkpoints, failures and restarts
  double days = 0;                 ///< wall, in days
  double gpu_hours = 0;
  double cost_usd = 0;
  double mtbf_seconds = 0;
  double checkpoint_bytes = 0;
  double checkpoint_write_seconds = 0;
  double checkpoint_interval_seconds = 0;
  double expected_interruptions = 0;
  double checkpoint_lost_seconds = 0;  ///< writing checkpoints, over the run
  double failure_lost_seconds = 0;     ///< recomputed work and restarts, over the run
};

/// The run of `tokens` tokens at the predicted step `st` of a strategy on `gpus` GPUs of `c`.
constexpr run_cost estimate_run(const model_desc& md, const step_cost& st, std::size_t global_tokens_per_step,
                                double tokens, std::size_t gpus, const cluster& c, const precision_desc& p = {}) noexcept {
  run_cost r{};
  const double n = static_cast<double>(gpus);
  const double peak = p.half() && !c.cpu ? c.peak_flops_16 : c.peak_flops_32;
  r.tokens_per_second = static_cast<double>(global_tokens_per_step) / st.step_seconds;
  r.mfu = st.model_flops / st.step_seconds / (n * peak);
  r.hfu = st.hardware_flops / st.step_seconds / (n * peak);
  r.flops_per_gpu = st.hardware_flops / st.step_seconds / n;
  r.train_seconds = tokens / r.tokens_per_second;

  const double nodes = static_cast<double>((gpus + c.gpus_per_node - 1) / c.gpus_per_node);
  r.mtbf_seconds = c.failures_per_node_day > 0 ? 86400.0 / (nodes * c.failures_per_node_day) : 1e30;
  r.checkpoint_bytes = static_cast<double>(md.params()) * static_cast<double>(p.states.params + p.states.optimizer());
  r.checkpoint_write_seconds = r.checkpoint_bytes / (nodes * c.checkpoint_bandwidth);
  r.checkpoint_interval_seconds = young_daly_interval(r.checkpoint_write_seconds, r.mtbf_seconds);
  const double tau = r.checkpoint_interval_seconds, delta = r.checkpoint_write_seconds, m = r.mtbf_seconds;
  double useful = 1 - delta / tau - (tau / 2 + c.restart_seconds) / m;
  if (useful < 0.01) useful = 0.01;  // failures outpace progress: the run hardly moves
  r.wall_seconds = r.train_seconds / useful;
  r.expected_interruptions = r.wall_seconds / m;
  r.checkpoint_lost_seconds = r.wall_seconds * delta / tau;
  r.failure_lost_seconds = r.expected_interruptions * (tau / 2 + c.restart_seconds);
  r.days = r.wall_seconds / 86400.0;
  r.gpu_hours = n * r.wall_seconds / 3600.0;
  r.cost_usd = r.gpu_hours * c.price_per_gpu_hour;
  return r;
}

/// Narayanan et al. 2021, eq. (4): end-to-end training time ≈ 8·T·P / (n·X) seconds for T
/// tokens, P parameters, n GPUs at X FLOP/s each (full recomputation: 8 = 2·(1 + 2 + 1)).
constexpr double narayanan_training_seconds(double tokens, double params, double gpus, double flops_per_gpu) noexcept {
  return 8 * tokens * params / (gpus * flops_per_gpu);
}

}  // namespace weft::planner

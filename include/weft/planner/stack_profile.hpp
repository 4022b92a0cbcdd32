#pragma once
// ---- the software stack's efficiency: a profile, selectable by name, and its calibration ----
// The cost model's constants (the GEMM curve's e_max, collective_efficiency, the memory-bound
// passes at the memory bandwidth, a fixed per-step overhead) describe one stack: Megatron-LM on
// DGX A100, the stack Narayanan et al. 2021 Table 1 was measured on and the curve was fitted to.
// The same layout runs slower or faster under another stack (other kernels, other collectives,
// launch gaps, a framework's own overheads). A profile scales those constants:
//
//   gemm      multiplies the GEMM curve's e_max: the fraction of peak every matrix product reaches
//   comm      multiplies the bandwidth every collective and message reaches (collective_efficiency)
//   memory    multiplies the memory bandwidth the elementwise work and the optimizer reach
//   overhead  seconds added to every step (launch gaps, Python, logging, the data loader)
//
// It applies to a cluster (with_stack): the GEMM factor scales the dense peaks the step is timed
// against — time = FLOPs / (peak · efficiency), so scaling peak and scaling e_max are the same —
// and the link bandwidths and the memory bandwidth likewise. Utilisation figures (MFU, HFU) stay
// against the *nominal* peak: give estimate_run the cluster without the profile.
//
// `calibrate` fits one factor from one measured step of a known layout: the factor at which the
// predicted tokens/s equals the measured one (bisection; the step time falls monotonically as the
// factor grows). One measurement fits one factor; the others stay the profile's. The curve's
// shape (its half-points m0 = n0 = k0) is not a factor: estimate_step takes the device class's.
#include "weft/planner/cluster.hpp"     // cluster
#include "weft/planner/model_desc.hpp"  // model_desc, strategy_desc, batch_desc
#include "weft/planner/step_cost.hpp"   // estimate_step, job_options

#include <cstddef>
#include <string_view>

namespace weft::planner {

/// Efficiency factors of a software stack, relative to the cost model's Megatron-LM constants.
struct stack_profile {
  std::string_view name = "megatron";
  double gemm = 1;        ///< × the GEMM curve's e_max (fraction of peak reached by matrix products)
  double comm = 1;        ///< × the bandwidth collectives and pipeline messages reach
  double memory = 1;      ///< × the memory bandwidth of elementwise work and the optimizer
  double overhead = 0;    ///< seconds added to every step
  friend constexpr bool operator==(const stack_profile&, const stack_profile&) = default;
};

namespace stacks {
/// Megatron-LM (Narayanan et al. 2021): the constants as fitted, every factor 1.
constexpr stack_profile megatron() noexcept { return {"megatron", 1, 1, 1, 0}; }
/// PyTorch FSDP under MosaicML Composer / llm-foundry on H100 (bf16): GEMM factor 0.64, fitted
/// with `calibrate` on one published row — llm-foundry's MPT-13B, seq 2048, 8 H100, FULL_SHARD,
/// micro-batch 2, no activation checkpointing, 4,792 tokens/s per GPU
/// (scripts/train/benchmarking/README.md) — and checked on that table's other H100 rows
/// (docs/planner_validation.md). The A100 rows of the same table need no factor: the curve was
/// fitted on A100, and H100 reaches a smaller fraction of its higher peak than that e_max says.
constexpr stack_profile fsdp_h100() noexcept { return {"fsdp-h100", 0.64, 1, 1, 0}; }
/// Megatron-DeepSpeed (DeepSpeed's pipeline engine and ZeRO-1 around Megatron's tensor-parallel
/// layers): GEMM factor 0.78, fitted with `calibrate` on one published row — MT-NLG 530B on 2240
/// A100 (tp 8, pp 35, dp 8, batch 1920), 126 TFLOP/s per GPU (Smith et al. 2022) — where Megatron-LM
/// itself ran the same model and layout family at 159–171 (Narayanan et al. 2021, Table 2). The
/// factor lumps whatever makes that stack slower (pipeline engine, kernels) into the GEMM rate.
constexpr stack_profile deepspeed() noexcept { return {"deepspeed", 0.78, 1, 1, 0}; }
}  // namespace stacks

/// The profile called `name` ("megatron", "deepspeed", "fsdp-h100"); `found` false for an unknown name.
struct profile_lookup {
  stack_profile value{};
  bool found = false;
};
constexpr profile_lookup find_stack(std::string_view name) noexcept {
  if (name == "megatron") return {stacks::megatron(), true};
  if (name == "fsdp-h100") return {stacks::fsdp_h100(), true};
  if (name == "deepspeed") return {stacks::deepspeed(), true};
  return {};
}

/// The cluster as the stack sees it: peaks × gemm, link bandwidths × comm, memory bandwidth ×
/// memory, the step overhead + overhead. Time against this; utilisation against `c` itself.
constexpr cluster with_stack(cluster c, const stack_profile& p) noexcept {
  c.peak_flops_16 *= p.gemm;
  c.peak_flops_32 *= p.gemm;
  c.peak_flops_8 *= p.gemm;
  c.intra_bandwidth *= p.comm;
  c.inter_bandwidth *= p.comm;
  c.island_bandwidth *= p.comm;
  c.memory_bandwidth *= p.memory;
  c.step_overhead_seconds += p.overhead;
  return c;
}

/// Which factor `calibrate` fits.
enum class stack_factor : unsigned char { gemm, comm, memory };
constexpr const char* stack_factor_name(stack_factor f) noexcept {
  return f == stack_factor::gemm ? "gemm" : f == stack_factor::comm ? "comm" : "memory";
}

/// The result of a calibration.
struct calibration {
  bool ok = false;           ///< a factor in [lo, hi] reproduces the measurement
  stack_profile fitted{};    ///< the profile with the fitted factor
  double factor = 0;         ///< the fitted value of the factor
  double predicted_before = 0;  ///< tokens/s the profile predicted before the fit
  double predicted_after = 0;   ///< tokens/s at the fitted factor
  double measured = 0;          ///< tokens/s given
};

namespace detail {
constexpr stack_profile with_factor(stack_profile p, stack_factor f, double x) noexcept {
  (f == stack_factor::gemm ? p.gemm : f == stack_factor::comm ? p.comm : p.memory) = x;
  return p;
}
constexpr double profiled_tokens_per_second(const model_desc& md, const batch_desc& b, const strategy_desc& s,
                                            const cluster& c, const job_options& o, const stack_profile& p) noexcept {
  return static_cast<double>(b.tokens()) / estimate_step(md, b.seq, s, with_stack(c, p), o).step_seconds;
}
}  // namespace detail

/// Fits `factor` of `profile` so that strategy `s` of `md` on `c` predicts `measured_tokens_per_second`
/// (the whole cluster's tokens/s, global batch `b`). Bisection in [lo, hi]; `ok` false when the
/// measurement lies outside what the factor can reach there (e.g. a run faster than any GEMM
/// factor ≤ hi can explain: the other terms already take longer than the measured step).
constexpr calibration calibrate(const model_desc& md, const batch_desc& b, const strategy_desc& s, const cluster& c,
                                const job_options& o, const stack_profile& profile, double measured_tokens_per_second,
                                stack_factor factor = stack_factor::gemm, double lo = 0.05, double hi = 4.0) noexcept {
  calibration r{};
  r.measured = measured_tokens_per_second;
  r.predicted_before = detail::profiled_tokens_per_second(md, b, s, c, o, profile);
  const auto at = [&](double x) {
    return detail::profiled_tokens_per_second(md, b, s, c, o, detail::with_factor(profile, factor, x));
  };
  if (!(measured_tokens_per_second > 0) || at(lo) > measured_tokens_per_second || at(hi) < measured_tokens_per_second) {
    r.fitted = profile;
    return r;
  }
  for (int i = 0; i < 100 && hi - lo > 1e-9 * hi; ++i) {
    const double mid = 0.5 * (lo + hi);
    (at(mid) < measured_tokens_per_second ? lo : hi) = mid;
  }
  r.ok = true;
  r.factor = 0.5 * (lo + hi);
  r.fitted = detail::with_factor(profile, factor, r.factor);
  r.fitted.name = "calibrated";
  r.predicted_after = at(r.factor);
  return r;
}

}  // namespace weft::planner

#pragma once
// ---- the achievable fraction of peak of a matrix product, by shape ----
// A GEMM of (m × k)·(k × n) reaches a fraction of the device's dense peak that grows with
// each dimension and saturates: small dimensions leave tensor cores idle (tile quantisation,
// too few thread blocks for the SMs, the memory-bound regime). The curve:
//
//   efficiency(m, n, k) = e_max · m/(m + m0) · n/(n + n0) · k/(k + k0)
//
// with one set of constants per device class (gemm_curve), fitted once to the whole of
// Narayanan et al. 2021 Table 1 (not per row) for GPUs and to bench_parallel_step's single
// rank for the CPU preset; docs/planner.md shows the curve and the fit.
#include <cstddef>

namespace weft::planner {

/// The constants of the efficiency curve.
struct gemm_curve {
  double e_max = 0.76;  ///< fraction of peak a large square GEMM reaches (cuBLAS bf16 on A100/H100)
  double m0 = 96;       ///< rows at which the m factor is 1/2
  double n0 = 96;
  double k0 = 96;
};

/// The curve of tensor-core GPUs (bf16/f16).
constexpr gemm_curve gpu_gemm_curve() noexcept { return {0.76, 96, 96, 96}; }
/// The curve of one CPU core under OpenBLAS (f32): saturates early, flat after.
constexpr gemm_curve cpu_gemm_curve() noexcept { return {0.85, 16, 16, 16}; }

/// Fraction of peak a GEMM of (m × k)·(k × n) achieves.
constexpr double gemm_efficiency(double m, double n, double k, const gemm_curve& c = gpu_gemm_curve()) noexcept {
  if (m <= 0 || n <= 0 || k <= 0) return c.e_max;
  return c.e_max * (m / (m + c.m0)) * (n / (n + c.n0)) * (k / (k + c.k0));
}

/// Seconds of a GEMM of (m × k)·(k × n) (2·m·n·k FLOPs), `count` times, on a device of `peak` FLOP/s.
constexpr double gemm_seconds(double m, double n, double k, double peak, const gemm_curve& c = gpu_gemm_curve(),
                              double count = 1) noexcept {
  return count * 2.0 * m * n * k / (peak * gemm_efficiency(m, n, k, c));
}

}  // namespace weft::planner

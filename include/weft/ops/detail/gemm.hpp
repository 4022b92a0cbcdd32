#pragma once
// ---- general matrix product, row-major, runtime sizes ----
//   C(m, n) = alpha * op(A)(m, k) · op(B)(k, n) + beta * C(m, n)
// op(X) is X or X^T as the flags say; leading dimensions are row strides. With
// WEFT_HAS_CBLAS defined (weft::host defines it and links OpenBLAS), float and double go to
// cblas_sgemm / cblas_dgemm; other element types, and builds without CBLAS, use the
// portable cache-blocked loops in gemm_fallback. As in BLAS, beta == 0 means C is written,
// not read (stale NaNs in C do not leak into the result).
// bf16 storage (gemm_bf16): inputs bf16, products accumulated in float (oneDNN's matmul on the
// CPU's matrix engine where weft::host found oneDNN — gemm_dnnl.hpp —, cblas_sbgemm, or the
// portable loops), C either float (accumulated by BLAS itself) or bf16 (each tile of C is
// computed in a float buffer, beta * C included, and rounded once on store).
#include "weft/core/dtype.hpp"              // bf16
#include "weft/ops/detail/gemm_dnnl.hpp"    // host_bf16_product, dnnl_gemm_bf16 (WEFT_HAS_DNNL)
#include "weft/ops/detail/host_common.hpp"  // parallel_min_work
#include "weft/ops/host_element.hpp"        // host_element

#include <algorithm>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <type_traits>

#if defined(WEFT_HAS_CBLAS)
#include <cblas.h>
#endif

namespace weft::ops::detail {

// ---- portable fallback ----
// Blocking: each thread owns row blocks of C (gemm_mc rows). For each (gemm_nc columns,
// gemm_kc depth) panel it packs op(B) into a contiguous stack buffer, so the inner loop is
// a contiguous axpy over a row of C whatever the transposes are; the packed panel stays in
// L2 and a row segment of C in L1.
inline constexpr std::size_t gemm_mc = 32;
inline constexpr std::size_t gemm_kc = 64;
inline constexpr std::size_t gemm_nc = 256;

template <host_element T>
void gemm_fallback(bool trans_a, bool trans_b, std::size_t m, std::size_t n, std::size_t k, T alpha,
                   const T* a, std::size_t lda, const T* b, std::size_t ldb, T beta, T* c,
                   std::size_t ldc) {
  // op(A)(i, p) and op(B)(p, j) over the stored, row-major A and B.
  auto a_at = [=](std::size_t i, std::size_t p) { return trans_a ? a[p * lda + i] : a[i * lda + p]; };
  auto b_at = [=](std::size_t p, std::size_t j) { return trans_b ? b[j * ldb + p] : b[p * ldb + j]; };
  const std::size_t row_blocks = (m + gemm_mc - 1) / gemm_mc;
  [[maybe_unused]] const bool big = m * n * k >= parallel_min_work * 8;
#pragma omp parallel for schedule(dynamic) if (big && row_blocks > 1)
  for (std::size_t rb = 0; rb < row_blocks; ++rb) {
    const std::size_t i0 = rb * gemm_mc, i1 = std::min(m, i0 + gemm_mc);
    // ---- scale this row block of C by beta first; the panels then only add ----
    for (std::size_t i = i0; i < i1; ++i) {
      T* crow = c + i * ldc;  // (n)
      if (beta == T(0)) {
        std::fill(crow, crow + n, T(0));
      } else if (beta != T(1)) {
        for (std::size_t j = 0; j < n; ++j) crow[j] *= beta;
      }
    }
    T packed[gemm_kc * gemm_nc];  // (kc, nc) panel of op(B)
    for (std::size_t j0 = 0; j0 < n; j0 += gemm_nc) {
      const std::size_t nb = std::min(gemm_nc, n - j0);
      for (std::size_t p0 = 0; p0 < k; p0 += gemm_kc) {
        const std::size_t kb = std::min(gemm_kc, k - p0);
        for (std::size_t p = 0; p < kb; ++p)
          for (std::size_t j = 0; j < nb; ++j) packed[p * nb + j] = b_at(p0 + p, j0 + j);
        for (std::size_t i = i0; i < i1; ++i) {
          T* crow = c + i * ldc + j0;  // (nb)
          for (std::size_t p = 0; p < kb; ++p) {
            const T av = alpha * a_at(i, p0 + p);
            const T* brow = packed + p * nb;  // (nb)
#pragma omp simd
            for (std::size_t j = 0; j < nb; ++j) crow[j] += av * brow[j];
          }
        }
      }
    }
  }
}

// ---- dispatch ----
#if !defined(WEFT_HAS_CBLAS) && !defined(WEFT_PORTABLE_GEMM)
// Said at build time, where a float/double product is instantiated without CBLAS: a program
// compiled by hand without -DWEFT_HAS_CBLAS would otherwise run about 10x slower, silently.
[[deprecated(
    "weft: float/double matrix products are built without CBLAS and use the portable loops (about 10x "
    "slower). Link weft::host from CMake, or compile with -DWEFT_HAS_CBLAS and link OpenBLAS "
    "(-I/usr/include/x86_64-linux-gnu/openblas-openmp -lopenblas); define WEFT_PORTABLE_GEMM to accept the "
    "portable loops.")]]
inline void portable_gemm_for_float_or_double() {}
#else
inline void portable_gemm_for_float_or_double() {}
#endif

// ---- bf16 inputs, float accumulation ----
// Each thread owns tiles of C, (gemm_bf16_mt, gemm_bf16_nt), held in float on its stack with
// beta * C folded in; a bf16 C is rounded exactly once, after the whole depth k. The depth
// runs in panels of gemm_bf16_kc: op(A) and op(B) panels are widened to float (exact) and
// multiplied by cblas_sgemm into the tile, or by the portable loops without CBLAS. Either way
// every product and sum is a float operation, as in sbgemm / tensor cores. Debian's OpenBLAS
// 0.3.21 declares cblas_sbgemm but is built without it (undefined symbol at link time):
// define WEFT_HAS_CBLAS_SBGEMM where the library exports it, and a float C then goes straight
// to sbgemm. Stack per thread: tile 64 KiB + panels 32 + 128 KiB.
inline constexpr std::size_t gemm_bf16_mt = 64;
inline constexpr std::size_t gemm_bf16_nt = 256;
inline constexpr std::size_t gemm_bf16_kc = 128;

// tile(mb, nb) += alpha * op(A)(i0.., :) · op(B)(:, j0..), in float. H: bf16 or f16 (both
// widen to float exactly).
template <half_float H>
inline void gemm_bf16_tile(bool trans_a, bool trans_b, std::size_t i0, std::size_t mb, std::size_t j0,
                           std::size_t nb, std::size_t k, float alpha, const H* a, std::size_t lda,
                           const H* b, std::size_t ldb, float* tile) {
  float pa[gemm_bf16_mt * gemm_bf16_kc];  // (mb, kb) panel of op(A), row stride kb
  float pb[gemm_bf16_kc * gemm_bf16_nt];  // (kb, nb) panel of op(B), row stride nb
  for (std::size_t p0 = 0; p0 < k; p0 += gemm_bf16_kc) {
    const std::size_t kb = std::min(gemm_bf16_kc, k - p0);
    for (std::size_t i = 0; i < mb; ++i)
      for (std::size_t p = 0; p < kb; ++p)
        pa[i * kb + p] = static_cast<float>(trans_a ? a[(p0 + p) * lda + i0 + i] : a[(i0 + i) * lda + p0 + p]);
    for (std::size_t p = 0; p < kb; ++p)
      for (std::size_t j = 0; j < nb; ++j)
        pb[p * nb + j] = static_cast<float>(trans_b ? b[(j0 + j) * ldb + p0 + p] : b[(p0 + p) * ldb + j0 + j]);
#if defined(WEFT_HAS_CBLAS)
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, int(mb), int(nb), int(kb), alpha, pa, int(kb), pb,
                int(nb), 1.0f, tile, int(nb));
#else
    for (std::size_t i = 0; i < mb; ++i) {
      float* trow = tile + i * nb;  // (nb)
      for (std::size_t p = 0; p < kb; ++p) {
        const float av = alpha * pa[i * kb + p];
        const float* brow = pb + p * nb;  // (nb)
#pragma omp simd
        for (std::size_t j = 0; j < nb; ++j) trow[j] += av * brow[j];
      }
    }
#endif
  }
}

// C(m, n) = alpha * op(A) · op(B) + beta * C with A, B bf16 (or f16) and C float or the same
// 16-bit type; accumulation in float.
template <class Out, half_float H>
  requires std::same_as<Out, float> || std::same_as<Out, H>
void gemm_bf16(bool trans_a, bool trans_b, std::size_t m, std::size_t n, std::size_t k, float alpha,
               const H* a, std::size_t lda, const H* b, std::size_t ldb, float beta, Out* c,
               std::size_t ldc) {
#if defined(WEFT_USE_DNNL)
  if constexpr (std::same_as<H, bf16>) {
    // The matrix engine (AMX / AVX512-BF16) through a cached oneDNN primitive, unless the host
    // backend was told to run the portable product (set_host_bf16_product).
    if (m > 0 && n > 0 && k > 0 && host_bf16_product() == host_bf16_gemm::dnnl) {
      weft::detail::dnnl_gemm_bf16(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, !std::same_as<Out, float>);
      return;
    }
  }
#endif
#if defined(WEFT_HAS_CBLAS) && defined(WEFT_HAS_CBLAS_SBGEMM)
  if constexpr (std::same_as<Out, float> && std::same_as<H, bf16>) {
    // A float C needs no staging: sbgemm accumulates into it directly.
    cblas_sbgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans, int(m),
                 int(n), int(k), alpha, reinterpret_cast<const std::uint16_t*>(a), int(lda),
                 reinterpret_cast<const std::uint16_t*>(b), int(ldb), beta, c, int(ldc));
    return;
  }
#endif
  const std::size_t row_tiles = (m + gemm_bf16_mt - 1) / gemm_bf16_mt;
  const std::size_t col_tiles = (n + gemm_bf16_nt - 1) / gemm_bf16_nt;
  [[maybe_unused]] const bool big = m * n * k >= parallel_min_work * 8;
#pragma omp parallel for collapse(2) schedule(dynamic) if (big && row_tiles * col_tiles > 1)
  for (std::size_t rt = 0; rt < row_tiles; ++rt) {
    for (std::size_t ct = 0; ct < col_tiles; ++ct) {
      const std::size_t i0 = rt * gemm_bf16_mt, mb = std::min(gemm_bf16_mt, m - i0);
      const std::size_t j0 = ct * gemm_bf16_nt, nb = std::min(gemm_bf16_nt, n - j0);
      float tile[gemm_bf16_mt * gemm_bf16_nt];  // (mb, nb) of C, row stride nb
      for (std::size_t i = 0; i < mb; ++i)
        for (std::size_t j = 0; j < nb; ++j)
          tile[i * nb + j] = beta == 0.0f ? 0.0f : beta * static_cast<float>(c[(i0 + i) * ldc + j0 + j]);
      gemm_bf16_tile(trans_a, trans_b, i0, mb, j0, nb, k, alpha, a, lda, b, ldb, tile);
      for (std::size_t i = 0; i < mb; ++i)
        for (std::size_t j = 0; j < nb; ++j) c[(i0 + i) * ldc + j0 + j] = Out(tile[i * nb + j]);
    }
  }
}

template <host_element T>
void gemm(bool trans_a, bool trans_b, std::size_t m, std::size_t n, std::size_t k, T alpha, const T* a,
          std::size_t lda, const T* b, std::size_t ldb, T beta, T* c, std::size_t ldc) {
  if constexpr (half_float<T>) {
    gemm_bf16(trans_a, trans_b, m, n, k, static_cast<float>(alpha), a, lda, b, ldb, static_cast<float>(beta), c,
              ldc);
    return;
  } else {
#if defined(WEFT_HAS_CBLAS)
    if constexpr (std::same_as<T, float> || std::same_as<T, double>) {
      // CBLAS takes int sizes; the ops check their compile-time sizes against INT_MAX.
      const auto ta = trans_a ? CblasTrans : CblasNoTrans;
      const auto tb = trans_b ? CblasTrans : CblasNoTrans;
      if constexpr (std::same_as<T, float>)
        cblas_sgemm(CblasRowMajor, ta, tb, int(m), int(n), int(k), alpha, a, int(lda), b, int(ldb), beta,
                    c, int(ldc));
      else
        cblas_dgemm(CblasRowMajor, ta, tb, int(m), int(n), int(k), alpha, a, int(lda), b, int(ldb), beta,
                    c, int(ldc));
      return;
    }
#endif
    if constexpr (std::same_as<T, float> || std::same_as<T, double>) portable_gemm_for_float_or_double();
    gemm_fallback(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  }
}

}  // namespace weft::ops::detail

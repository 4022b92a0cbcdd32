#pragma once
// ---- general matrix product, row-major, runtime sizes ----
//   C(m, n) = alpha * op(A)(m, k) · op(B)(k, n) + beta * C(m, n)
// op(X) is X or X^T as the flags say; leading dimensions are row strides. With
// WEFT_HAS_CBLAS defined (weft::host defines it and links OpenBLAS), float and double go to
// cblas_sgemm / cblas_dgemm; other element types, and builds without CBLAS, use the
// portable cache-blocked loops in gemm_fallback. As in BLAS, beta == 0 means C is written,
// not read (stale NaNs in C do not leak into the result).
#include "weft/ops/detail/host_common.hpp"  // parallel_min_work
#include "weft/ops/host_element.hpp"        // host_element

#include <algorithm>
#include <concepts>
#include <cstddef>

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

template <host_element T>
void gemm(bool trans_a, bool trans_b, std::size_t m, std::size_t n, std::size_t k, T alpha, const T* a,
          std::size_t lda, const T* b, std::size_t ldb, T beta, T* c, std::size_t ldc) {
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

}  // namespace weft::ops::detail

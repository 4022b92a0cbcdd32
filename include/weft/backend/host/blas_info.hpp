#pragma once
// ---- which matrix-product library the host backend runs on, and how it threads ----
// The host step's own loops run on OpenMP; OpenBLAS built on OpenMP shares that pool, while the
// pthread build starts its own threads beside it (they fight over the cores). weft::host links
// the OpenMP build when it is installed; this header lets a program say which one it got.

#include <string>

#if defined(WEFT_HAS_CBLAS)
#include <cblas.h>
#endif
#if defined(_OPENMP)
#include <omp.h>
#endif

namespace weft {

/// How the host matrix products are computed and threaded.
enum class blas_threading { portable, sequential, pthread, openmp };

/// The threading model of the linked CBLAS (`portable`: no CBLAS, weft's own loops).
inline blas_threading host_blas_threading() {
#if defined(WEFT_HAS_CBLAS) && defined(OPENBLAS_VERSION)
  switch (openblas_get_parallel()) {
    case 0: return blas_threading::sequential;
    case 2: return blas_threading::openmp;
    default: return blas_threading::pthread;
  }
#elif defined(WEFT_HAS_CBLAS)
  return blas_threading::sequential;  // a CBLAS other than OpenBLAS: assume it does not thread
#else
  return blas_threading::portable;
#endif
}

/// Threads the host step uses (OpenMP's maximum; 1 without OpenMP).
inline int host_threads() {
#if defined(_OPENMP)
  return omp_get_max_threads();
#else
  return 1;
#endif
}

/// Sets the host step's thread count: OpenMP's, and the pthread OpenBLAS's own when that is the one linked.
inline void set_host_threads(int n) {
#if defined(_OPENMP)
  omp_set_num_threads(n);
#endif
#if defined(WEFT_HAS_CBLAS) && defined(OPENBLAS_VERSION)
  openblas_set_num_threads(n);
#endif
  (void)n;
}

/// One line for banners: "OpenBLAS (OpenMP), 2 threads".
inline std::string host_backend_summary() {
  const char* blas = "portable loops (no CBLAS)";
  switch (host_blas_threading()) {
    case blas_threading::sequential: blas = "CBLAS (sequential)"; break;
    case blas_threading::pthread: blas = "OpenBLAS (own pthreads)"; break;
    case blas_threading::openmp: blas = "OpenBLAS (OpenMP)"; break;
    case blas_threading::portable: break;
  }
  return std::string(blas) + ", " + std::to_string(host_threads()) + " thread" + (host_threads() == 1 ? "" : "s");
}

}  // namespace weft

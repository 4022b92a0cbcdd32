// A consumer program: uses weft's core types from outside the library and checks them.
#include <weft/io.hpp>  // needs nlohmann-json, found through weft's package config
#include <weft/weft.hpp>

#include <cstdio>

using namespace weft;

using activations = shape<axis<"batch", 4>, axis<"seq", 64>, axis<"width", 768>>;
using per_rank = activations::split<"width", 2>;  // what one of two tensor-parallel ranks holds
static_assert(per_rank::size_of<"width"> == 384);

int main() {
  int failures = 0;
  failures += (activations::product != 4u * 64u * 768u);
  failures += (per_rank::index_of<"seq">() != 1);
  failures += (safetensors_writer{}.set_metadata("format", "pt").layout().head.size() % 8 != 0);
#if defined(WEFT_OPENBLAS_OPENMP)
  // Linked through weft::host where Debian's OpenMP OpenBLAS is installed: the matrix products
  // must run on the step's OpenMP pool, not on OpenBLAS's own pthreads (they fight over cores).
  failures += (host_blas_threading() != blas_threading::openmp);
#endif
  if (failures != 0) {
    std::printf("consumer failed: %d checks\n", failures);
    return 1;
  }
  std::printf("consumer ok: weft %d.%d.%d, %zu elements per rank; host: %s\n", WEFT_VERSION_MAJOR,
              WEFT_VERSION_MINOR, WEFT_VERSION_PATCH, per_rank::product, host_backend_summary().c_str());
  return 0;
}

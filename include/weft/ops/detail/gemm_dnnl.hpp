#pragma once
// ---- the host bf16 matrix product on the CPU's matrix engine, through oneDNN ----
// With WEFT_HAS_DNNL defined (weft::host defines it when CMake finds oneDNN, Debian
// libdnnl-dev), detail::gemm_bf16 hands a bf16 product to a oneDNN matmul primitive: inputs
// bf16, products accumulated in f32, C f32 (accumulated in place) or bf16 (beta * C added in
// f32 by a sum post-op and rounded once on store, as the portable path does). oneDNN picks the
// kernel for the CPU at run time: AMX tiles (brg:avx512_core_amx) where the CPU has them,
// AVX512-BF16 dot products (brg:avx512_core_bf16) otherwise, and plain AVX-512 emulation below
// that. ONEDNN_VERBOSE=1 prints which one ran.
//
// Creating a matmul primitive costs far more than a small product (JIT code generation), so
// primitives are kept per shape (transposes, sizes, leading dimensions, alpha, beta, C's type)
// for the life of the program; a training step reuses the same few dozen shapes every step.
//
// Which product runs is the host backend's choice (host_bf16_product below): oneDNN where it
// is linked, weft's portable float-tile product otherwise or when asked for
// (set_host_bf16_product(host_bf16_gemm::portable), or WEFT_HOST_BF16_GEMM=portable in the
// environment) — that path stays the reference every platform has.

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

// WEFT_USE_DNNL: oneDNN is linked and this translation unit can include its C++ header. nvcc's
// front end (CUDA 13) stops with an internal error on dnnl.hpp in some CUDA translation units
// (tests/comm/test_gpu_shared_dp.cu), so a .cu file's host code keeps the portable bf16 product.
#if defined(WEFT_HAS_DNNL) && !defined(__CUDACC__)
#define WEFT_USE_DNNL 1
#endif

#if defined(WEFT_USE_DNNL)
#include <oneapi/dnnl/dnnl.hpp>

#include <mutex>
#include <unordered_map>
#endif

namespace weft {

/// Which matrix product the host backend runs for bf16 operands.
enum class host_bf16_gemm {
  portable,  ///< weft's float-tile product (bf16 panels widened to f32, cblas_sgemm or loops)
  dnnl,      ///< oneDNN's matmul (AMX / AVX512-BF16 kernels), f32 accumulation
};

namespace detail {
inline host_bf16_gemm host_bf16_gemm_default() {
#if defined(WEFT_USE_DNNL)
  const char* env = std::getenv("WEFT_HOST_BF16_GEMM");
  if (env != nullptr && std::strcmp(env, "portable") == 0) return host_bf16_gemm::portable;
  return host_bf16_gemm::dnnl;
#else
  return host_bf16_gemm::portable;
#endif
}
inline std::atomic<host_bf16_gemm>& host_bf16_gemm_choice() {
  static std::atomic<host_bf16_gemm> choice{host_bf16_gemm_default()};
  return choice;
}
}  // namespace detail

/// Whether this build links oneDNN (WEFT_HAS_DNNL).
inline constexpr bool host_has_dnnl =
#if defined(WEFT_USE_DNNL)
    true;
#else
    false;
#endif

/// The product the host backend runs for bf16 now.
inline host_bf16_gemm host_bf16_product() { return detail::host_bf16_gemm_choice().load(std::memory_order_relaxed); }

/// Chooses the bf16 product; asking for dnnl in a build without oneDNN keeps the portable one.
/// Returns the product now in use.
inline host_bf16_gemm set_host_bf16_product(host_bf16_gemm g) {
  if (g == host_bf16_gemm::dnnl && !host_has_dnnl) g = host_bf16_gemm::portable;
  detail::host_bf16_gemm_choice().store(g, std::memory_order_relaxed);
  return g;
}

/// One word for banners: "oneDNN 2.6.3" or "portable float tiles".
inline std::string host_bf16_product_summary() {
#if defined(WEFT_USE_DNNL)
  if (host_bf16_product() == host_bf16_gemm::dnnl) {
    const dnnl_version_t* v = dnnl_version();
    return "oneDNN " + std::to_string(v->major) + "." + std::to_string(v->minor) + "." + std::to_string(v->patch);
  }
#endif
  return "portable float tiles";
}

#if defined(WEFT_USE_DNNL)
namespace detail {

// One cached matmul: its primitive (the JIT kernel) and its memory descriptors.
struct dnnl_gemm_entry {
  dnnl::matmul prim;
  dnnl::memory::desc a, b, c;
};

struct dnnl_gemm_key {
  bool ta, tb, c_bf16;
  std::size_t m, n, k, lda, ldb, ldc;
  float alpha, beta;
  bool operator==(const dnnl_gemm_key&) const = default;
};
struct dnnl_gemm_key_hash {
  std::size_t operator()(const dnnl_gemm_key& key) const noexcept {
    std::size_t h = (std::size_t(key.ta) << 2) | (std::size_t(key.tb) << 1) | std::size_t(key.c_bf16);
    auto mix = [&](std::size_t v) { h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2); };
    mix(key.m), mix(key.n), mix(key.k), mix(key.lda), mix(key.ldb), mix(key.ldc);
    std::uint32_t fa, fb;
    std::memcpy(&fa, &key.alpha, 4);
    std::memcpy(&fb, &key.beta, 4);
    mix(fa), mix(fb);
    return h;
  }
};

inline dnnl::engine& dnnl_cpu_engine() {
  static dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  return eng;
}

// The primitive for a shape, created on first use. Entries are never removed, so the
// reference stays valid after the lock is released.
inline const dnnl_gemm_entry& dnnl_gemm_primitive(const dnnl_gemm_key& key) {
  static std::mutex mu;
  static std::unordered_map<dnnl_gemm_key, dnnl_gemm_entry, dnnl_gemm_key_hash> cache;
  std::lock_guard<std::mutex> lock(mu);
  if (auto it = cache.find(key); it != cache.end()) return it->second;
  using dims = dnnl::memory::dims;
  using dt = dnnl::memory::data_type;
  const auto m = dnnl::memory::dim(key.m), n = dnnl::memory::dim(key.n), k = dnnl::memory::dim(key.k);
  const auto lda = dnnl::memory::dim(key.lda), ldb = dnnl::memory::dim(key.ldb), ldc = dnnl::memory::dim(key.ldc);
  // op(A)(m, k) and op(B)(k, n) described by strides over the stored row-major matrices.
  dnnl::memory::desc a({m, k}, dt::bf16, key.ta ? dims{1, lda} : dims{lda, 1});
  dnnl::memory::desc b({k, n}, dt::bf16, key.tb ? dims{1, ldb} : dims{ldb, 1});
  dnnl::memory::desc c({m, n}, key.c_bf16 ? dt::bf16 : dt::f32, dims{ldc, 1});
  dnnl::primitive_attr attr;
  if (key.alpha != 1.0f) attr.set_output_scales(0, {key.alpha});
  if (key.beta != 0.0f) {
    dnnl::post_ops po;
    po.append_sum(key.beta);
    attr.set_post_ops(po);
  }
  dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a, b, c), attr, dnnl_cpu_engine());
  return cache.emplace(key, dnnl_gemm_entry{dnnl::matmul(pd), a, b, c}).first->second;
}

// C(m, n) = alpha * op(A) · op(B) + beta * C; A, B bf16 (raw 16-bit storage), C f32 or bf16.
inline void dnnl_gemm_bf16(bool trans_a, bool trans_b, std::size_t m, std::size_t n, std::size_t k, float alpha,
                           const void* a, std::size_t lda, const void* b, std::size_t ldb, float beta, void* c,
                           std::size_t ldc, bool c_bf16) {
  const dnnl_gemm_entry& e = dnnl_gemm_primitive({trans_a, trans_b, c_bf16, m, n, k, lda, ldb, ldc, alpha, beta});
  thread_local dnnl::stream s(dnnl_cpu_engine());
  dnnl::engine& eng = dnnl_cpu_engine();
  dnnl::memory ma(e.a, eng, const_cast<void*>(a)), mb(e.b, eng, const_cast<void*>(b)), mc(e.c, eng, c);
  e.prim.execute(s, {{DNNL_ARG_SRC, ma}, {DNNL_ARG_WEIGHTS, mb}, {DNNL_ARG_DST, mc}});
  s.wait();
}

}  // namespace detail
#endif

}  // namespace weft

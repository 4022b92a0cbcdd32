#pragma once
// ---- one warp's tensor-core product, with a host version: D(16×8, f32) += A(16×16)·B(16×8) ----
// The tensor-core instruction (`mma.sync.aligned.m16n8k16.row.col.f32.{bf16,f16}`, sm_80 and
// later) is warp-collective: each of the 32 lanes hands in fragments of A and B and receives four
// elements of D. A CPU cannot run it, and the emulator (grid.hpp) runs lanes one after another, so
// weft's mma primitive takes its operands from shared memory and gives each lane exactly its four
// elements of D:
//   * on the device the lane gathers its A and B fragments from shared memory (the PTX ISA's
//     fragment layouts, below), packs them into registers and issues the instruction;
//   * on the host the lane computes its four elements of D directly: Σ_k A(m, k)·B(k, n) in f32,
//     k ascending, for the (m, n) the C layout gives it.
// The two differ only in the order and rounding of the f32 accumulation. Which (m, n) a lane
// owns is the same on both, so everything a kernel does with its accumulators (scaling, masking,
// row statistics, writing) runs on the CPU exactly as on the device. The gathers are
// WEFT_HOST_DEVICE, so a test on the host rebuilds whole matrices from 32 lanes' fragments and
// checks them against the layouts (tests/kernel/test_mma.cpp).
//
// Layouts, with g = lane / 4 and t = lane % 4 (PTX ISA, "Matrix fragments for mma.m16n8k16";
// CuTe's SM80_16x8x16 traits say the same):
//   A (16×16, row): a0 a1 = (g, 2t), (g, 2t+1)      a2 a3 = (g+8, 2t), (g+8, 2t+1)
//                   a4 a5 = (g, 2t+8), (g, 2t+9)    a6 a7 = (g+8, 2t+8), (g+8, 2t+9)
//   B (16×8, col):  b0 b1 = (2t, g), (2t+1, g)      b2 b3 = (2t+8, g), (2t+9, g)     [(k, n)]
//   C (16×8, f32):  c0 c1 = (g, 2t), (g, 2t+1)      c2 c3 = (g+8, 2t), (g+8, 2t+1)
// Register i of A packs elements 2i (low 16 bits) and 2i + 1; likewise B.
//
// Operands are addressed by compile-time strides (elements): A(m, k) = a[m·ARS + k·ACS],
// B(k, n) = b[k·BRS + n·BCS]. Where the pair (2t, 2t+1) is adjacent in memory (ACS == 1 for A,
// BRS == 1 for B) the device loads it as one 32-bit word (the address must be 4-byte aligned:
// even strides and an even base offset).
#include "weft/backend/cuda/kernels/grid.hpp"  // to_f32, WEFT_HOST_DEVICE
#include "weft/core/dtype.hpp"                 // bf16, f16

#include <cstdint>
#include <cstring>
#include <type_traits>

namespace weft::cuda::kernels {

/// Elements this lane contributes to (A: 8, B: 4) or receives from (C: 4) one m16n8k16 product.
struct mma_coord {
  unsigned row, col;
};

/// (m, k) of A element i (0..7) held by `lane`.
WEFT_HOST_DEVICE constexpr mma_coord mma_a_coord(unsigned lane, unsigned i) noexcept {
  const unsigned g = lane / 4, t = lane % 4;
  return {g + 8 * ((i / 2) % 2), 2 * t + (i % 2) + 8 * (i / 4)};
}
/// (k, n) of B element i (0..3) held by `lane`.
WEFT_HOST_DEVICE constexpr mma_coord mma_b_coord(unsigned lane, unsigned i) noexcept {
  const unsigned g = lane / 4, t = lane % 4;
  return {2 * t + (i % 2) + 8 * (i / 2), g};
}
/// (m, n) of accumulator i (0..3) held by `lane`.
WEFT_HOST_DEVICE constexpr mma_coord mma_c_coord(unsigned lane, unsigned i) noexcept {
  const unsigned g = lane / 4, t = lane % 4;
  return {g + 8 * (i / 2), 2 * t + (i % 2)};
}

/// Whether T has a tensor-core m16n8k16 product here (bf16 and f16; f32 does not — TF32 would
/// round its inputs, so f32 attention stays on the exact path).
template <class T>
inline constexpr bool mma_element = std::is_same_v<T, bf16> || std::is_same_v<T, f16>;

namespace detail {
template <class T>
WEFT_HOST_DEVICE std::uint32_t mma_pack(T lo, T hi) noexcept {
  return std::uint32_t(lo.bits) | (std::uint32_t(hi.bits) << 16);
}
}  // namespace detail

/// This lane's A fragment (4 registers) of the 16×16 tile at `a`.
template <int ARS, int ACS, class T>
WEFT_HOST_DEVICE void mma_gather_a(std::uint32_t (&r)[4], unsigned lane, const T* a) noexcept {
  static_assert(mma_element<T>, "weft::cuda::kernels::mma: the element type has no m16n8k16 tensor-core product. Use bf16 or f16.");
#pragma unroll
  for (unsigned i = 0; i < 4; ++i) {
    const mma_coord c = mma_a_coord(lane, 2 * i);
    const T* p = a + c.row * ARS + c.col * ACS;
    if constexpr (ACS == 1) {
      std::uint32_t w;
#if defined(__CUDA_ARCH__)
      w = *reinterpret_cast<const std::uint32_t*>(p);
#else
      std::memcpy(&w, p, sizeof w);
#endif
      r[i] = w;
    } else {
      r[i] = detail::mma_pack(p[0], p[ACS]);
    }
  }
}

/// This lane's B fragment (2 registers) of the 16×8 tile at `b`.
template <int BRS, int BCS, class T>
WEFT_HOST_DEVICE void mma_gather_b(std::uint32_t (&r)[2], unsigned lane, const T* b) noexcept {
  static_assert(mma_element<T>, "weft::cuda::kernels::mma: the element type has no m16n8k16 tensor-core product. Use bf16 or f16.");
#pragma unroll
  for (unsigned i = 0; i < 2; ++i) {
    const mma_coord c = mma_b_coord(lane, 2 * i);
    const T* p = b + c.row * BRS + c.col * BCS;
    if constexpr (BRS == 1) {
      std::uint32_t w;
#if defined(__CUDA_ARCH__)
      w = *reinterpret_cast<const std::uint32_t*>(p);
#else
      std::memcpy(&w, p, sizeof w);
#endif
      r[i] = w;
    } else {
      r[i] = detail::mma_pack(p[0], p[BRS]);
    }
  }
}

/// acc += A(16×16)·B(16×8) for this lane's four elements of the warp's product (see the top).
/// Every lane of the warp calls it together (on the device it is one warp-collective
/// instruction): the condition around a call must be the same for the whole warp.
template <int ARS, int ACS, int BRS, int BCS, class T>
WEFT_HOST_DEVICE void warp_mma(float (&acc)[4], unsigned lane, const T* a, const T* b) noexcept {
  static_assert(mma_element<T>, "weft::cuda::kernels::warp_mma: the element type has no m16n8k16 tensor-core product. Use bf16 or f16.");
#if defined(__CUDA_ARCH__)
  std::uint32_t ra[4], rb[2];
  mma_gather_a<ARS, ACS>(ra, lane, a);
  mma_gather_b<BRS, BCS>(rb, lane, b);
#if __CUDA_ARCH__ >= 800
  if constexpr (std::is_same_v<T, bf16>) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
        : "+f"(acc[0]), "+f"(acc[1]), "+f"(acc[2]), "+f"(acc[3])
        : "r"(ra[0]), "r"(ra[1]), "r"(ra[2]), "r"(ra[3]), "r"(rb[0]), "r"(rb[1]));
  } else {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
        : "+f"(acc[0]), "+f"(acc[1]), "+f"(acc[2]), "+f"(acc[3])
        : "r"(ra[0]), "r"(ra[1]), "r"(ra[2]), "r"(ra[3]), "r"(rb[0]), "r"(rb[1]));
  }
#else
  __trap();  // below sm_80: no m16n8k16 product (the CUDA targets build for sm_80 and sm_90a)
#endif
#else
  for (unsigned i = 0; i < 4; ++i) {
    const mma_coord c = mma_c_coord(lane, i);
    float s = 0;
    for (unsigned k = 0; k < 16; ++k) s += to_f32(a[c.row * ARS + k * ACS]) * to_f32(b[k * BRS + c.col * BCS]);
    acc[i] += s;
  }
#endif
}

}  // namespace weft::cuda::kernels

#pragma once
// ---- host_element: the element types the host ops store, and the types they compute in ----
// The host ops are templates on the storage type T, deduced from their pointers. A built-in
// floating type (double, the correctness oracle; float, training; long double, which exercises
// the portable, non-BLAS paths) is computed in itself. weft::bf16 and weft::f16 are storage
// types only: every op loads them into float (compute_t), computes and accumulates as it would
// for float (row statistics in acc_t, i.e. double), and rounds once when it stores. Norm
// statistics and per-row losses of a bf16/f16 op are kept in stat_t = float (see
// docs/precision.md). f16's range ends at 65504: a store beyond it gives inf, which the step's
// dynamic loss scaling detects (train/loss_scaler.hpp).
#include "weft/core/dtype.hpp"  // bf16, f16, half_float

#include <concepts>

namespace weft::ops {

/// Satisfied by the element types the host ops accept: float, double, long double, bf16, f16.
template <class T>
concept host_element = std::floating_point<T> || half_float<T>;

namespace detail {

template <class T>
struct compute_type {
  using type = T;
};
template <>
struct compute_type<bf16> {
  using type = float;
};
template <>
struct compute_type<f16> {
  using type = float;
};

}  // namespace detail

/// The type a host op computes in for storage type T: T itself, float for bf16 and f16.
template <host_element T>
using compute_t = typename detail::compute_type<T>::type;

/// The storage type of row statistics (norm mean / rstd) and per-row losses: the compute type,
/// so that a bf16 model keeps them in float (they are O(rows), and a rounded rstd would scale
/// a whole row's error).
template <host_element T>
using stat_t = compute_t<T>;

/// Whether T is a storage-only type (its ops load into compute_t<T> and round on store).
template <class T>
inline constexpr bool is_storage_only_v = half_float<T>;

/// x rounded to storage type T, as T(x) is, in a form GCC vectorises inside `omp simd` loops:
/// bf16's converting constructor there makes a temporary whose address the loop keeps (GCC 12
/// then leaves the loop scalar); from_bits over the branch-free rounding does not.
template <host_element T, class F>
inline T store_as(F x) noexcept {
  if constexpr (std::same_as<T, bf16> && std::same_as<F, float>)
    return bf16::from_bits(weft::detail::float_to_bf16_bits(x));
  else
    return T(x);
}

}  // namespace weft::ops

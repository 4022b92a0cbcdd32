#pragma once
// ---- shared helpers of the kernel tests: random data in a dtype, comparison with a reference ----
// Inputs are drawn, rounded to the kernel's element type T, and the reference (a host op in
// double) is computed from exactly those rounded values. A result passes when
//     max |got - ref| <= k * eps(T) * max(max |ref|, floor)
// i.e. k units of T's epsilon relative to the reference's magnitude. Each check prints its
// measured error and tolerance, so the test log doubles as the accuracy table.
#include <weft/core/dtype.hpp>  // bf16

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <random>
#include <string>
#include <vector>

namespace kcheck {

/// Machine epsilon of the kernel's element type (bf16: 2^-7, float: 2^-23).
template <class T>
inline constexpr double eps_v = static_cast<double>(std::numeric_limits<T>::epsilon());

template <class T>
inline const char* name_v = "f32";
template <>
inline const char* name_v<weft::bf16> = "bf16";
template <>
inline const char* name_v<weft::f16> = "f16";

/// n values uniform in [lo, hi), rounded to T.
template <class T>
std::vector<T> random(std::size_t n, std::mt19937& rng, double lo = -1.0, double hi = 1.0) {
  std::uniform_real_distribution<double> d(lo, hi);
  std::vector<T> v(n);
  for (auto& x : v) x = static_cast<T>(static_cast<float>(d(rng)));
  return v;
}

/// The values of v, exactly, as doubles.
template <class T>
std::vector<double> widen(const std::vector<T>& v) {
  std::vector<double> r(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) r[i] = static_cast<double>(static_cast<float>(v[i]));
  return r;
}

/// Compares got (T) with ref (double) over [0, n) (all when n = 0); prints and checks the bound.
template <class T>
double check(const std::string& what, const std::vector<T>& got, const std::vector<double>& ref, double k,
             double floor = 0.0, std::size_t n = 0) {
  if (n == 0) n = ref.size();
  REQUIRE(got.size() >= n);
  double max_err = 0, max_ref = floor;
  std::size_t worst = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const double g = static_cast<double>(static_cast<float>(got[i]));
    const double e = std::fabs(g - ref[i]);
    if (!(e <= max_err)) {  // NaN counts as the worst
      max_err = std::isnan(e) ? INFINITY : e;
      worst = i;
    }
    max_ref = std::max(max_ref, std::fabs(ref[i]));
  }
  const double tol = k * eps_v<T> * max_ref;
  std::printf("[kernel-accuracy] %-40s %-4s max err %.3e  tol %.3e  (%.2f of tol; |ref| %.3g)\n", what.c_str(),
              name_v<T>, max_err, tol, tol > 0 ? max_err / tol : 0.0, max_ref);
  INFO(what << " " << name_v<T> << ": worst element " << worst << " got "
            << static_cast<double>(static_cast<float>(got[worst])) << " ref " << ref[worst]);
  CHECK(max_err <= tol);
  return max_err;
}

/// Same, for a reference given as doubles and a result given as doubles (e.g. a sum).
inline void check_scalar(const std::string& what, const char* dtype, double got, double ref, double tol) {
  const double err = std::fabs(got - ref);
  std::printf("[kernel-accuracy] %-40s %-4s max err %.3e  tol %.3e  (%.2f of tol; |ref| %.3g)\n", what.c_str(), dtype,
              err, tol, tol > 0 ? err / tol : 0.0, std::fabs(ref));
  CHECK(err <= tol);
}

}  // namespace kcheck

#pragma once
// ---- helpers shared by the ops tests: random data, error metric, finite differences ----
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <random>
#include <vector>

namespace weft::ops::test {

// Deterministic uniform values in [lo, hi).
inline std::vector<double> random_vector(std::size_t n, unsigned seed, double lo = -1.0, double hi = 1.0) {
  std::mt19937_64 gen(seed);
  std::uniform_real_distribution<double> dist(lo, hi);
  std::vector<double> v(n);
  for (auto& x : v) x = dist(gen);
  return v;
}

template <class To, class From>
std::vector<To> convert(const std::vector<From>& v) {
  return std::vector<To>(v.begin(), v.end());
}

// max|a - b| / max(max|a|, max|b|, 1e-12): relative to the scale of the whole tensor, so
// entries near zero do not blow the metric up.
template <class A, class B>
double rel_err(const std::vector<A>& a, const std::vector<B>& b) {
  double diff = 0, scale = 1e-12;
  for (std::size_t i = 0; i < a.size(); ++i) {
    diff = std::max(diff, std::abs(double(a[i]) - double(b[i])));
    scale = std::max({scale, std::abs(double(a[i])), std::abs(double(b[i]))});
  }
  return a.size() == b.size() ? diff / scale : 1e300;
}

// sum(out * r): the scalar loss whose gradient with respect to out is r.
inline double dot(const std::vector<double>& out, const std::vector<double>& r) {
  double s = 0;
  for (std::size_t i = 0; i < out.size(); ++i) s += out[i] * r[i];
  return s;
}

// Central differences of loss() with respect to every element of x (x is restored).
template <class Loss>
std::vector<double> fd_gradient(std::vector<double>& x, Loss&& loss, double h = 1e-5) {
  std::vector<double> g(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double x0 = x[i];
    x[i] = x0 + h;
    const double up = loss();
    x[i] = x0 - h;
    const double down = loss();
    x[i] = x0;
    g[i] = (up - down) / (2 * h);
  }
  return g;
}

// a - b, elementwise: turns an accumulated gradient back into the op's own contribution.
inline std::vector<double> minus(const std::vector<double>& a, const std::vector<double>& b) {
  std::vector<double> d(a.size());
  for (std::size_t i = 0; i < a.size(); ++i) d[i] = a[i] - b[i];
  return d;
}

}  // namespace weft::ops::test

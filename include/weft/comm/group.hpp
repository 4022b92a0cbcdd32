#pragma once
// ---- tp_group: the communication interface of model/ ----
// Sharded layers (model/tensor_parallel_layers.hpp) and the frame (model/layer.hpp) name this
// small abstract class, never a communicator: it is the one piece of comm/ that model/ sees,
// with no dependency of its own. comm/tp_adapter.hpp implements it over any `communicator`.
// bf16 (precision<bf16, f32> under tensor parallelism): the adapter moves the 2-byte values
// themselves; a group that implements only float and double gets the bf16 calls through float
// (exact for the gather; each sum in float, rounded once, as the communicators' bf16 sums).
#include "weft/core/dtype.hpp"  // bf16

#include <cstddef>
#include <vector>

namespace weft {

/// The tensor-parallel group a sharded layer talks to: a type-erased view of a communicator
/// (comm/tp_adapter.hpp adapts any `communicator`), so that model/ depends on this interface
/// alone, not on any communicator.
/// Host buffers; every rank of the group makes the same calls in the same order. all_gather and
/// reduce_scatter_sum move `n` elements per rank, rank-major: in (n) -> out (size * n), and
/// in (size * n) -> out (n) holding the sum of every rank's block rank().
struct tp_group {
  virtual ~tp_group() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual void all_reduce_sum(float* data, std::size_t n) = 0;
  virtual void all_reduce_sum(double* data, std::size_t n) = 0;
  virtual void all_reduce_max(float* data, std::size_t n) = 0;
  virtual void all_reduce_max(double* data, std::size_t n) = 0;
  virtual void all_gather(const float* in, float* out, std::size_t n) = 0;
  virtual void all_gather(const double* in, double* out, std::size_t n) = 0;
  virtual void reduce_scatter_sum(const float* in, float* out, std::size_t n) = 0;
  virtual void reduce_scatter_sum(const double* in, double* out, std::size_t n) = 0;
  virtual void all_reduce_sum(bf16* data, std::size_t n) {
    std::vector<float> w(data, data + n);
    all_reduce_sum(w.data(), n);
    for (std::size_t i = 0; i < n; ++i) data[i] = bf16(w[i]);
  }
  virtual void all_gather(const bf16* in, bf16* out, std::size_t n) {
    std::vector<float> a(in, in + n), b(n * static_cast<std::size_t>(size()));
    all_gather(a.data(), b.data(), n);
    for (std::size_t i = 0; i < b.size(); ++i) out[i] = bf16(b[i]);
  }
  virtual void reduce_scatter_sum(const bf16* in, bf16* out, std::size_t n) {
    std::vector<float> a(in, in + n * static_cast<std::size_t>(size())), b(n);
    reduce_scatter_sum(a.data(), b.data(), n);
    for (std::size_t i = 0; i < n; ++i) out[i] = bf16(b[i]);
  }
};

}  // namespace weft

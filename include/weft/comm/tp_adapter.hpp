#pragma once
// ---- tp_adapter: any communicator as the tensor-parallel group a sharded model talks to ----
// model/ sees tensor parallelism only through the type-erased tp_group (model/layer.hpp);
// this adapter forwards its calls to a communicator (MPI, a world of one, later NCCL), so
// the layers do not depend on comm/ and one model type runs over any of them.
#include "weft/comm/communicator.hpp"  // communicator, reduce_op
#include "weft/model/layer.hpp"        // tp_group

#include <cstddef>
#include <memory>
#include <span>
#include <utility>

namespace weft {

/// A tp_group over a copy of the communicator `Comm` (copies are handles to the same group).
template <communicator Comm>
class communicator_tp_group final : public tp_group {
 public:
  explicit communicator_tp_group(Comm comm) : comm_(std::move(comm)) {}

  int rank() const override { return comm_.rank(); }
  int size() const override { return comm_.size(); }
  void all_reduce_sum(float* data, std::size_t n) override { reduce(data, n, reduce_op::sum); }
  void all_reduce_sum(double* data, std::size_t n) override { reduce(data, n, reduce_op::sum); }
  void all_reduce_max(float* data, std::size_t n) override { reduce(data, n, reduce_op::max); }
  void all_reduce_max(double* data, std::size_t n) override { reduce(data, n, reduce_op::max); }
  void all_gather(const float* in, float* out, std::size_t n) override { gather(in, out, n); }
  void all_gather(const double* in, double* out, std::size_t n) override { gather(in, out, n); }
  void reduce_scatter_sum(const float* in, float* out, std::size_t n) override { scatter(in, out, n); }
  void reduce_scatter_sum(const double* in, double* out, std::size_t n) override { scatter(in, out, n); }
  // bf16 travels as its 2 bytes; each sum is formed in float and rounded once (communicator.hpp).
  void all_reduce_sum(bf16* data, std::size_t n) override { reduce(data, n, reduce_op::sum); }
  void all_gather(const bf16* in, bf16* out, std::size_t n) override { gather(in, out, n); }
  void reduce_scatter_sum(const bf16* in, bf16* out, std::size_t n) override { scatter(in, out, n); }

  Comm& communicator() { return comm_; }

 private:
  template <class T>
  void reduce(T* data, std::size_t n, reduce_op op) {
    comm_.all_reduce(std::span<T>(data, n), op);
  }
  template <class T>
  void gather(const T* in, T* out, std::size_t n) {  // in (n) -> out (size, n)
    comm_.all_gather(std::span<const T>(in, n), std::span<T>(out, n * static_cast<std::size_t>(comm_.size())));
  }
  template <class T>
  void scatter(const T* in, T* out, std::size_t n) {  // in (size, n) -> out (n)
    comm_.reduce_scatter(std::span<const T>(in, n * static_cast<std::size_t>(comm_.size())), std::span<T>(out, n));
  }

  Comm comm_;
};

/// The tensor-parallel group of the ranks in `comm`, for tensor_parallel_step.
template <communicator Comm>
std::unique_ptr<tp_group> make_tp_group(const Comm& comm) {
  return std::make_unique<communicator_tp_group<Comm>>(comm);
}

}  // namespace weft

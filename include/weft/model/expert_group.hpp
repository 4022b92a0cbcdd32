#pragma once
// ---- expert_group: the group of ranks that share out the experts of a mixture of experts ----
// A type-erased view of an all_to_all_communicator (comm/expert_group_adapter.hpp adapts one),
// so that model/ does not depend on comm/, as tp_group does for tensor parallelism. Host
// buffers; every rank of the group makes the same calls in the same order.
#include <cstddef>
#include <cstdint>

namespace weft {

/// The expert-parallel group a sharded mixture of experts exchanges tokens with.
struct expert_group {
  virtual ~expert_group() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  /// in, out (size * n): block q of in to rank q, block p of out from rank p.
  virtual void all_to_all(const std::int32_t* in, std::int32_t* out, std::size_t n) = 0;
  /// Uneven blocks, back to back in rank order: send_counts[q] elements of in to rank q,
  /// recv_counts[p] elements of out from rank p (size() counts each); in_capacity and
  /// out_capacity bound the sums.
  virtual void all_to_all_v(const float* in, const int* send_counts, std::size_t in_capacity, float* out,
                            const int* recv_counts, std::size_t out_capacity) = 0;
  virtual void all_to_all_v(const double* in, const int* send_counts, std::size_t in_capacity, double* out,
                            const int* recv_counts, std::size_t out_capacity) = 0;
};

/// The expert group layers of the calling thread use (ep_moe_mlp, model/ep_moe_mlp.hpp) while a
/// bind_expert_group is alive; nullptr when none is. A stop-gap: frames carry the tensor-parallel
/// group (frame::tp) but not yet an expert group, and adding one is a change to every step; until
/// then the step's caller binds the group around its forward and backward.
inline expert_group*& bound_expert_group() {
  thread_local expert_group* g = nullptr;
  return g;
}

/// Binds `g` as the calling thread's expert group for its lifetime (restores the previous one).
class bind_expert_group {
 public:
  explicit bind_expert_group(expert_group& g) : saved_(bound_expert_group()) { bound_expert_group() = &g; }
  ~bind_expert_group() { bound_expert_group() = saved_; }
  bind_expert_group(const bind_expert_group&) = delete;
  bind_expert_group& operator=(const bind_expert_group&) = delete;

 private:
  expert_group* saved_;
};

}  // namespace weft

#pragma once
// ---- expert_group_adapter: any all_to_all_communicator as the model's expert_group ----
#include "weft/comm/all_to_all.hpp"     // all_to_all_communicator
#include "weft/model/expert_group.hpp"  // expert_group

#include <cstddef>
#include <cstdint>
#include <span>

namespace weft {

/// Holds a reference to `Comm` (which must outlive it) and forwards the expert group's calls.
template <all_to_all_communicator Comm>
class expert_group_adapter final : public expert_group {
 public:
  explicit expert_group_adapter(Comm& c) : c_(c) {}
  int rank() const override { return c_.rank(); }
  int size() const override { return c_.size(); }
  void all_to_all(const std::int32_t* in, std::int32_t* out, std::size_t n) override {
    const std::size_t all = n * static_cast<std::size_t>(c_.size());
    c_.all_to_all(std::span<const std::int32_t>(in, all), std::span<std::int32_t>(out, all));
  }
  void all_to_all_v(const float* in, const int* send_counts, std::size_t in_capacity, float* out,
                    const int* recv_counts, std::size_t out_capacity) override {
    exchange(in, send_counts, in_capacity, out, recv_counts, out_capacity);
  }
  void all_to_all_v(const double* in, const int* send_counts, std::size_t in_capacity, double* out,
                    const int* recv_counts, std::size_t out_capacity) override {
    exchange(in, send_counts, in_capacity, out, recv_counts, out_capacity);
  }

 private:
  template <class T>
  void exchange(const T* in, const int* sc, std::size_t in_capacity, T* out, const int* rc, std::size_t out_capacity) {
    const auto n = static_cast<std::size_t>(c_.size());
    c_.all_to_all_v(std::span<const T>(in, in_capacity), std::span<const int>(sc, n), std::span<T>(out, out_capacity),
                    std::span<const int>(rc, n));
  }
  Comm& c_;
};

}  // namespace weft

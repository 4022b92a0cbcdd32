#pragma once
// ---- gradient_runs: runs of the parameter block to reduce as backward finishes them ----
// Backward reports "the gradients at offsets >= from are final" (grad_ready_hook, layer.hpp),
// last parameter first. An executor that must reduce some of the parameters over a group as
// soon as they are final (the replicated ones of a sequence-parallel shard over tp, the dense
// ones of an expert-parallel rank over its expert group) lists them once here; each report
// then yields the runs newly final, adjacent ones merged into one call. Every rank of the group
// runs the same model, so the reports, and the calls, come in the same order everywhere.
#include <algorithm>
#include <cstddef>
#include <vector>

namespace weft {

class gradient_runs {
 public:
  struct run {
    std::size_t offset, size;
  };

  gradient_runs() = default;
  /// The runs in any order (they must not overlap).
  explicit gradient_runs(std::vector<run> runs) : runs_(std::move(runs)) {
    std::sort(runs_.begin(), runs_.end(), [](const run& a, const run& b) { return a.offset > b.offset; });  // last first
  }

  /// Starts a new backward: every run is pending again.
  void restart() { next_ = 0; }

  /// Calls reduce(offset, size) for each pending run at offsets >= from, adjacent runs merged.
  template <class Reduce>
  void take_final(std::size_t from, Reduce&& reduce) {
    while (next_ < runs_.size() && runs_[next_].offset >= from) {
      std::size_t lo = runs_[next_].offset;
      const std::size_t hi = lo + runs_[next_].size;
      ++next_;
      while (next_ < runs_.size() && runs_[next_].offset >= from && runs_[next_].offset + runs_[next_].size == lo)
        lo = runs_[next_++].offset;
      reduce(lo, hi - lo);
    }
  }

  /// Every run, last first.
  const std::vector<run>& runs() const { return runs_; }
  bool empty() const { return runs_.empty(); }

 private:
  std::vector<run> runs_;
  std::size_t next_ = 0;
};

}  // namespace weft

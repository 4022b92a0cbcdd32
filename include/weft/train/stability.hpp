#pragma once
// ---- spike_guard: skip the update of a step whose loss or gradient norm jumps ----
// Large runs see rare loss spikes (PaLM, Chowdhery et al. 2022, §5.1; OPT's logbook): one bad
// batch, or a few, throw the loss and the gradient norm far above their recent level, and the
// update they would apply can derail training. The guard keeps the loss and the gradient norm
// of the last `window` accepted steps and judges each new step by its z-score against them:
//   accept    within the threshold (or still warming up): the step updates, its values join
//             the window
//   skip      a spike: the step does not update (the trainer moves on to the next batch)
//   rollback  the `rollback_after`-th consecutive spike: the trainer should restore its last
//             checkpoint and continue with the data position past the batches it has seen
//             (PaLM's remedy), since skipping alone has not brought the run back
// Only upward jumps are spikes: a loss that falls faster than usual is not a problem.
//
// The guard decides; the trainer acts. It is a predicate on (loss, grad_norm), so it plugs into
// `training_step::step(fill, accept)` and `data_parallel_step::step(fill, accept)`, which call it
// after the gradients are reduced and the global norm is known and before the optimizer. Those
// values are reductions over all ranks, so every rank's guard sees the same history and makes
// the same decision (the steps also agree on it collectively). Non-finite steps never reach the
// guard: the step skips them itself (step_metrics::nonfinite).
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <vector>

namespace weft {

/// Settings of a spike_guard.
struct spike_guard_options {
  std::size_t window = 100;         ///< accepted steps the mean and spread are taken over
  std::size_t warmup = 20;          ///< accepted steps before the guard judges any step
  double threshold = 6.0;           ///< a z-score above this is a spike (loss or gradient norm)
  std::size_t rollback_after = 3;   ///< consecutive spikes that ask for a rollback; 0: never
  /// The spread is at least this fraction of the mean, so that a flat history (a tiny standard
  /// deviation) does not turn noise into spikes.
  double min_relative_spread = 0.01;
};

/// What the guard says about one step.
enum class spike_decision { accept, skip, rollback };

/// Z-score spike detector over a window of accepted steps (see the top of this file).
class spike_guard {
 public:
  explicit spike_guard(spike_guard_options options = {}) : o_(options) {
    if (o_.window == 0) o_.window = 1;
    loss_.reserve(o_.window);
    norm_.reserve(o_.window);
  }

  /// Judges a step from its loss and global gradient norm (both finite) and records it.
  spike_decision check(double loss, double grad_norm) {
    last_loss_z_ = z_score(loss_, loss);
    last_norm_z_ = z_score(norm_, grad_norm);
    const bool judged = loss_.size() >= std::max<std::size_t>(o_.warmup, 2);
    const bool spike = judged && (last_loss_z_ > o_.threshold || last_norm_z_ > o_.threshold);
    if (!spike) {
      consecutive_ = 0;
      record(loss, grad_norm);
      return last_ = spike_decision::accept;
    }
    ++spikes_;
    ++consecutive_;
    if (o_.rollback_after != 0 && consecutive_ >= o_.rollback_after) {
      consecutive_ = 0;  // the rollback starts a fresh count; the window keeps the healthy history
      ++rollbacks_;
      return last_ = spike_decision::rollback;
    }
    return last_ = spike_decision::skip;
  }

  /// The predicate form: true (update) when check() accepts.
  bool operator()(double loss, double grad_norm) { return check(loss, grad_norm) == spike_decision::accept; }

  /// The last decision, and the z-scores it was made from (0 while the window is too short).
  spike_decision last() const { return last_; }
  double loss_z() const { return last_loss_z_; }
  double grad_norm_z() const { return last_norm_z_; }
  /// Spikes seen, rollbacks asked for, and the current run of consecutive spikes.
  std::size_t spikes() const { return spikes_; }
  std::size_t rollbacks() const { return rollbacks_; }
  std::size_t consecutive() const { return consecutive_; }
  const spike_guard_options& options() const { return o_; }

 private:
  // Appends until the window is full, then overwrites the oldest (a ring).
  void record(double loss, double grad_norm) {
    if (loss_.size() < o_.window) {
      loss_.push_back(loss);
      norm_.push_back(grad_norm);
      return;
    }
    loss_[next_] = loss;
    norm_[next_] = grad_norm;
    next_ = (next_ + 1) % o_.window;
  }
  // (x - mean) / spread over the window; 0 when it has fewer than 2 values.
  double z_score(const std::vector<double>& w, double x) const {
    if (w.size() < 2) return 0;
    double mean = 0;
    for (double v : w) mean += v;
    mean /= static_cast<double>(w.size());
    double var = 0;
    for (double v : w) var += (v - mean) * (v - mean);
    const double sd = std::sqrt(var / static_cast<double>(w.size() - 1));
    const double spread = std::max(sd, o_.min_relative_spread * std::abs(mean));
    return spread > 0 ? (x - mean) / spread : 0;
  }

  spike_guard_options o_;
  std::vector<double> loss_, norm_;  // the window: accepted steps only
  std::size_t next_ = 0;             // the oldest entry once the window is full
  std::size_t spikes_ = 0, rollbacks_ = 0, consecutive_ = 0;
  double last_loss_z_ = 0, last_norm_z_ = 0;
  spike_decision last_ = spike_decision::accept;
};

}  // namespace weft

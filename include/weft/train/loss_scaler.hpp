#pragma once
// ---- loss_scaler: dynamic loss scaling for f16 training (Micikevicius et al. 2018) ----
// f16 keeps 11 significant bits but only 5 exponent bits: the smallest normal is 2^-14 and
// gradients below 2^-24 are zero. The loss (in weft: the gradient of the loss fed to backward,
// dlogits) is multiplied by a scale S so that backward's values stay in range; the gradients
// are then divided by S before the norm is clipped and the optimizer runs. An overflow (a
// non-finite gradient on any rank) skips the step on every rank and halves S; after
// `growth_interval` good steps in a row S doubles. The defaults are PyTorch's GradScaler's.
// S stays a power of two (from 2^16, factors 2 and 1/2), so scaling and unscaling are exact
// wherever the values stay normal.
// The steps that run it: training_step (step_skeleton.hpp) and data_parallel_step over it,
// when the plan's element type is f16 (train_options::loss_scale.enabled, default on).
#include <cstddef>

namespace weft {

/// Run-time settings of dynamic loss scaling (train_options::loss_scale).
struct loss_scaling {
  bool enabled = true;               ///< used by f16 plans only; other element types never scale
  double init_scale = 65536.0;       ///< 2^16
  double growth_factor = 2.0;        ///< after growth_interval good steps in a row
  double backoff_factor = 0.5;       ///< after an overflow
  std::size_t growth_interval = 2000;
};

/// The scale and its history of one step object (the same on every rank of a group, since the
/// overflow verdict is collective).
class loss_scaler {
 public:
  loss_scaler() = default;
  loss_scaler(const loss_scaling& o, bool active) : o_(o), active_(active && o.enabled), scale_(o.init_scale) {}

  /// Whether this step scales at all (an f16 plan with scaling enabled).
  bool active() const { return active_; }
  /// The factor the loss gradient is multiplied by now (1 when inactive).
  double scale() const { return active_ ? scale_ : 1.0; }
  /// Good steps since the last overflow or growth.
  std::size_t good_steps() const { return good_; }
  /// Overflows so far.
  std::size_t overflows() const { return overflows_; }

  /// After a step: `overflow` (non-finite gradients) halves the scale and restarts the count;
  /// a good step counts, and the growth_interval-th in a row doubles the scale.
  void update(bool overflow) {
    if (!active_) return;
    if (overflow) {
      scale_ *= o_.backoff_factor;
      good_ = 0;
      ++overflows_;
    } else if (++good_ >= o_.growth_interval) {
      scale_ *= o_.growth_factor;
      good_ = 0;
    }
  }
  /// Restores a saved state (a checkpoint's).
  void restore(double scale, std::size_t good_steps) {
    scale_ = scale;
    good_ = good_steps;
  }

 private:
  loss_scaling o_{};
  bool active_ = false;
  double scale_ = 1.0;
  std::size_t good_ = 0, overflows_ = 0;
};

}  // namespace weft

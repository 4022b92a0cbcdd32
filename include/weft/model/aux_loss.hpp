#pragma once
// ---- auxiliary losses: what layers add to the training loss besides the cross-entropy ----
// A mixture of experts adds a load-balancing loss (model/moe.hpp). Its gradient needs no path
// through the step: the layer's backward adds weight * d aux / d (its own activations) itself,
// exactly as if the loss had been aux + cross-entropy. Only two things cross the layer boundary,
// and both go through this per-thread meter (the step's forward and backward run on the thread
// that calls it; the ops' OpenMP threads never touch it):
//   * the value: each backward adds its layer's aux value (once per micro-batch per layer; a
//     backward runs once even where recomputation re-runs a forward), and the trainer reads
//     the sum with take() after a step;
//   * the weight of one micro-batch in the step's loss, gradient_scale: 1 by default; under
//     gradient accumulation over k micro-batches set it to 1/k (the cross-entropy is a mean over
//     the step's tokens, so each micro-batch's aux counts 1/k), and 0 turns the auxiliary
//     gradients off (the gradient checks of the main path do).
#include <cstddef>

namespace weft {

/// Per-thread sums of the auxiliary losses of the backward passes run since the last take().
struct aux_loss_meter {
  double sum = 0;                ///< sum of the recorded values (weighted by nothing)
  std::size_t count = 0;         ///< how many values were recorded (layers x micro-batches)
  double gradient_scale = 1.0;   ///< weight of one micro-batch's aux loss in the step's loss

  void record(double value) {
    sum += value;
    ++count;
  }
  /// The recorded values' sum and count, then resets both (gradient_scale stays).
  struct totals {
    double sum;
    std::size_t count;
  };
  totals take() {
    const totals t{sum, count};
    sum = 0;
    count = 0;
    return t;
  }
};

/// The calling thread's meter.
inline aux_loss_meter& aux_losses() {
  thread_local aux_loss_meter m;
  return m;
}

}  // namespace weft

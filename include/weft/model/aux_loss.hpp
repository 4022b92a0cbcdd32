#pragma once
// ---- auxiliary losses: what layers add to the training loss besides the cross-entropy ----
// A mixture of experts adds a load-balancing loss (model/moe.hpp). Its gradient needs no path
// through the step: the layer's backward adds weight * d aux / d (its own activations) itself,
// exactly as if the loss had been aux + cross-entropy. Only two things cross the layer boundary,
// and both go through this per-thread meter (the step's forward and backward run on the thread
// that calls it; the ops' OpenMP threads never touch it):
//   * the value: each backward adds its layer's aux value (once per micro-batch per layer; a
//     backward runs once even where recomputation re-runs a forward; the pooled form adds the
//     value of all its layers once per micro-batch), and the trainer reads the sum with take()
//     after a step;
//   * the weight of one micro-batch in the step's loss, gradient_scale: 1 by default; under
//     gradient accumulation over k micro-batches set it to 1/k (the cross-entropy is a mean over
//     the step's tokens, so each micro-batch's aux counts 1/k), and 0 turns the auxiliary
//     gradients off (the gradient checks of the main path do).
// A mixture with the option pooled_aux_loss (transformers' form, model/moe.hpp) also leaves its
// routing statistics here between its forward and its backward: the loss is formed from the
// statistics of every such layer of the micro-batch, pooled (pooled_routing below).
#include <cstddef>
#include <map>
#include <stdexcept>
#include <utility>
#include <vector>

namespace weft {

/// transformers' pooled load-balancing loss (Mixtral's and Qwen3-MoE's load_balancing_loss_func):
/// the routing statistics of every pooled moe layer of one micro-batch, by layer (its model-wide
/// parameter offset). A layer's forward (with gradients) sets its entry, a recomputed forward sets
/// the same values again; its backward marks it done, and when every entry is done the micro-batch's
/// statistics are dropped. Backward therefore needs the forwards of all the micro-batch's pooled
/// layers first: one process running them all (a single stage; data, tensor and sequence
/// parallelism replicate the layers), not a pipeline's interleaved micro-batches.
struct pooled_routing {
  struct layer {
    std::vector<double> counts;     ///< per expert: routed slots
    std::vector<double> prob_sums;  ///< per expert: the router probabilities' sum over tokens
    double rows = 0;                ///< tokens
    double slots = 0;               ///< tokens x top-k
    bool done = false;              ///< its backward ran
  };
  std::map<std::size_t, layer> layers;

  /// Sets layer `key`'s statistics for the running micro-batch (a new micro-batch when all were done).
  /// Throws where the layer's statistics are still pending and no backward has run yet: the
  /// forwards of two micro-batches interleave (a pipeline schedule), which the pooled loss cannot
  /// tell apart (a recomputed forward comes after a backward of the micro-batch). A step that threw
  /// between its forward and its backward leaves them pending too: clear() them first.
  void set(std::size_t key, std::vector<double> counts, std::vector<double> prob_sums, double rows, double slots) {
    if (const auto it = layers.find(key); it != layers.end() && !it->second.done && none_done())
      throw std::logic_error(
          "weft::moe_mlp: pooled_aux_loss: a layer ran a second forward before the backward of its micro-batch (a "
          "pipeline schedule interleaves micro-batches). The pooled load-balancing loss needs each micro-batch's "
          "forwards, then its backwards, in one process: drop pooled_aux_loss under pipeline parallelism.");
    layer& l = layers[key];
    l.counts = std::move(counts);
    l.prob_sums = std::move(prob_sums);
    l.rows = rows;
    l.slots = slots;
    l.done = false;
  }
  /// Whether no layer of the micro-batch ran its backward yet (the first backward reports the value).
  bool none_done() const {
    for (const auto& [k, l] : layers)
      if (l.done) return false;
    return true;
  }
  /// The pooled statistics: counts and probability sums per expert over every layer, and the
  /// layers' rows and slots.
  struct totals {
    std::vector<double> counts, prob_sums;
    double rows = 0, slots = 0;
  };
  totals pooled() const {
    totals t;
    for (const auto& [k, l] : layers) {
      if (t.counts.empty()) t.counts.assign(l.counts.size(), 0.0), t.prob_sums.assign(l.counts.size(), 0.0);
      for (std::size_t e = 0; e < l.counts.size() && e < t.counts.size(); ++e)
        t.counts[e] += l.counts[e], t.prob_sums[e] += l.prob_sums[e];
      t.rows += l.rows;
      t.slots += l.slots;
    }
    return t;
  }
  /// Drops every pending statistic (after a step that threw between its forward and backward).
  void clear() { layers.clear(); }
  /// Marks layer `key`'s backward done; drops the micro-batch when it was the last.
  void finish(std::size_t key) {
    layers[key].done = true;
    for (const auto& [k, l] : layers)
      if (!l.done) return;
    layers.clear();
  }
};

/// Per-thread sums of the auxiliary losses of the backward passes run since the last take().
struct aux_loss_meter {
  double sum = 0;                ///< sum of the recorded values (weighted by nothing)
  std::size_t count = 0;         ///< how many values were recorded (layers x micro-batches)
  double gradient_scale = 1.0;   ///< weight of one micro-batch's aux loss in the step's loss
  pooled_routing pooled;         ///< the pooled form's statistics of the running micro-batch

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

#pragma once
// What the Hugging Face cross-check samples (hf_llama_sample, hf_neox_sample, hf_moe_sample,
// hf_gemma3_sample) share: the logits of fixed tokens written as f32, a model trained two
// deterministic steps and saved, a fresh model loaded, and the loss and gradients of a loaded
// model (the transformers tier, tests/io/hf_transformers_tier.py). Include it after the family's
// io/hf_*.hpp, whose load_hf_weights / save_hf_weights overloads it calls.
//
//   tokens of the logits:    (7 i + 3) mod vocab for i = 0 .. batch*seq-1, laid out (batch, seq)
//   targets of the gradient: (5 i + 2) mod vocab (the tokens as above)
//   tokens of the two steps: (start + 3 i) mod vocab, targets the next, start += 11 per step
#include "weft/exec/training_step.hpp"  // training_step, train_options
#include "weft/model/aux_loss.hpp"      // aux_losses

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <stdexcept>
#include <string>

namespace hf_sample {

/// <prefix>.logits.bin: the logits (batch, seq, vocab) of the fixed tokens, f32.
template <std::size_t Vocab, class Step>
void write_logits(Step& st, const std::string& prefix) {
  auto tokens = st.tokens();
  for (std::size_t i = 0; i < tokens.size(); ++i) tokens[i] = static_cast<std::int32_t>((7 * i + 3) % Vocab);
  st.forward();  // (batch, seq, vocab) in logits()
  std::ofstream f(prefix + ".logits.bin", std::ios::binary | std::ios::trunc);
  f.write(reinterpret_cast<const char*>(st.logits().data()), static_cast<std::streamsize>(st.logits().size_bytes()));
  if (!f) throw std::runtime_error("cannot write " + prefix + ".logits.bin");
}

/// Trains a Step two deterministic steps with large rates (norm gains, biases and routers move
/// well away from their initial values), then writes <dir>/hf (save_hf_weights) and
/// <dir>/saved.logits.bin.
template <std::size_t Vocab, class Step>
void save(const std::filesystem::path& dir) {
  weft::train_options o;
  o.optimizer.lr = 3e-2;
  o.seed = 7;
  Step st(o);
  std::size_t start = 0;
  for (int s = 0; s < 2; ++s)
    st.step([&](auto tokens, auto targets) {
      for (std::size_t i = 0; i < tokens.size(); ++i) {
        tokens[i] = static_cast<std::int32_t>((start + 3 * i) % Vocab);
        targets[i] = static_cast<std::int32_t>((start + 3 * i + 1) % Vocab);
      }
      start += 11;
    });
  save_hf_weights(st, dir / "hf");
  write_logits<Vocab>(st, (dir / "saved").string());
}

/// Loads `path` (load_hf_weights) into a Step of another initialisation, then writes
/// <prefix>.logits.bin.
template <std::size_t Vocab, class Step>
void load(const std::filesystem::path& path, const std::string& prefix) {
  weft::train_options o;
  o.seed = 99;  // nothing of this initialisation may survive the load
  Step st(o);
  load_hf_weights(st, path);
  write_logits<Vocab>(st, prefix);
}

/// Loads `path` into a fresh Step, then runs the forward and backward of one micro-batch (the
/// tokens of the logits, targets (5 i + 2) mod vocab) with the gradient of the mean loss, and writes
///   <dir>/loss.txt   "<mean cross-entropy> <auxiliary loss>" (the aux meter's sum: the
///                    load-balancing losses the step adds to the cross-entropy; 0 without experts)
///   <dir>/grad/      the gradients as a Hugging Face checkpoint (save_hf_weights of a copy of the
///                    step whose parameters are the gradients: transformers' names and layouts)
template <std::size_t Vocab, class Step>
void grad(const std::filesystem::path& path, const std::filesystem::path& dir) {
  weft::train_options o;
  o.seed = 99;
  Step st(o);
  load_hf_weights(st, path);
  auto tokens = st.tokens();
  auto targets = st.targets();
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    tokens[i] = static_cast<std::int32_t>((7 * i + 3) % Vocab);
    targets[i] = static_cast<std::int32_t>((5 * i + 2) % Vocab);
  }
  auto g = st.grads();
  std::fill(g.begin(), g.end(), 0.0f);
  weft::aux_losses().take();
  const double ce = st.accumulate(1.0f / static_cast<float>(Step::rows));
  const double aux = weft::aux_losses().take().sum;
  auto p = st.params();
  std::copy(g.begin(), g.end(), p.begin());
  std::filesystem::create_directories(dir);
  save_hf_weights(st, dir / "grad");
  std::ofstream f(dir / "loss.txt", std::ios::trunc);
  f << std::setprecision(17) << ce << ' ' << aux << '\n';
  if (!f) throw std::runtime_error("cannot write " + (dir / "loss.txt").string());
}

/// The modes every sample shares after its model is chosen: save <dir>, load <path> <prefix>,
/// grad <path> <dir>. Returns false on another mode or argument count.
template <std::size_t Vocab, class Step>
bool run_mode(const std::string& mode, int args, char** arg) {
  if (mode == "save" && args == 1) save<Vocab, Step>(arg[0]);
  else if (mode == "load" && args == 2) load<Vocab, Step>(arg[0], arg[1]);
  else if (mode == "grad" && args == 2) grad<Vocab, Step>(arg[0], arg[1]);
  else return false;
  return true;
}

}  // namespace hf_sample

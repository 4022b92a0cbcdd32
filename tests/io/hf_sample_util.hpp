#pragma once
// What the Hugging Face cross-check samples (hf_llama_sample, hf_neox_sample, hf_moe_sample,
// hf_gemma3_sample) share: the logits of fixed tokens written as f32, a model trained two
// deterministic steps and saved, and a fresh model loaded. Include it after the family's
// io/hf_*.hpp, whose load_hf_weights / save_hf_weights overloads it calls.
//
//   tokens of the logits:    (7 i + 3) mod vocab for i = 0 .. batch*seq-1, laid out (batch, seq)
//   tokens of the two steps: (start + 3 i) mod vocab, targets the next, start += 11 per step
#include "weft/exec/training_step.hpp"  // training_step, train_options

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
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

}  // namespace hf_sample

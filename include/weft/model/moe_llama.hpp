#pragma once
// ---- LLaMA with mixture-of-experts MLPs (Mixtral-style) ----
// moe_llama<llama_config<…>, Moe>: LLaMA's body (token embedding, pre-norm blocks of rmsnorm +
// grouped-query attention with rotary positions, a final rmsnorm, an untied head) with every
// block's MLP replaced by `Moe`, e.g. moe_mlp<width, 8, 2, ffn, swiglu_experts> — Mixtral's
// shape. Parameter names are llama<>'s; the MLP's are `layers.<i>.mlp.gate.weight`,
// `layers.<i>.mlp.experts.…` (see moe_mlp).
#include "weft/model/attention.hpp"        // attention
#include "weft/model/block.hpp"            // block
#include "weft/model/ep_moe_mlp.hpp"       // ep_moe_mlp (the form plan<> runs under expert_parallel)
#include "weft/model/llama.hpp"            // llama_config
#include "weft/model/lm_head.hpp"          // lm_head, untied
#include "weft/model/moe.hpp"              // moe_mlp
#include "weft/model/named.hpp"            // named
#include "weft/model/repeat.hpp"           // repeat
#include "weft/model/rmsnorm.hpp"          // rmsnorm
#include "weft/model/sequential.hpp"       // sequential
#include "weft/model/token_embedding.hpp"  // token_embedding

#include <cstddef>
#include <type_traits>

namespace weft {

namespace detail {
template <class Cfg, class Moe>
inline constexpr bool moe_llama_widths_match = Moe::in_width == Cfg::width && Moe::out_width == Cfg::width;
// After a width mismatch (reported by moe_llama), a stand-in of the right width.
template <class Cfg, class Moe>
using moe_llama_layer = std::conditional_t<moe_llama_widths_match<Cfg, Moe>, Moe, moe_mlp<Cfg::width, 1, 1, 1>>;
template <class Cfg, class Moe>
using moe_llama_block = block<rmsnorm<Cfg::width, Cfg::block_norm_eps>,
                              llama_attention<Cfg>,
                              rmsnorm<Cfg::width, Cfg::block_norm_eps>, Moe>;
template <class Cfg, class Moe>
using moe_llama_body = sequential<named<"embed", token_embedding<Cfg::vocab_size, Cfg::width>>,
                                  named<"layers", repeat<Cfg::depth, moe_llama_block<Cfg, Moe>>>,
                                  named<"norm", rmsnorm<Cfg::width, Cfg::block_norm_eps>>,
                                  named<"head", lm_head<Cfg::vocab_size, Cfg::width, typename Cfg::head_tie>>>;
}  // namespace detail

/// A LLaMA model whose blocks use the mixture of experts `Moe` as their MLP:
/// token ids (batch, seq) -> logits (batch, seq, vocab).
template <class Cfg, class Moe>
struct moe_llama : detail::moe_llama_body<Cfg, detail::moe_llama_layer<Cfg, Moe>> {
  static constexpr bool widths_match = detail::moe_llama_widths_match<Cfg, Moe>;
  static_assert(widths_match,
                "weft::moe_llama: the MoE layer's widths differ from the model width. Build it as moe_mlp<width, …>.");
  using config = Cfg;
  using moe_type = Moe;
  static constexpr std::size_t vocab_size = Cfg::vocab_size;
  static constexpr std::size_t context_length = Cfg::context_length;
  static constexpr std::size_t depth = Cfg::depth;
  static constexpr std::size_t width = Cfg::width;
  static constexpr std::size_t heads = Cfg::heads;
  static constexpr std::size_t kv_heads = Cfg::kv_heads;
  static constexpr std::size_t ffn = Moe::ffn;
  static constexpr std::size_t head_dim = Cfg::head_size;
  static constexpr const char* family = "moe_llama";
  /// Parameters only looked up, never multiplied (the untied token embedding; none when the head
  /// multiplies by it).
  static constexpr std::size_t lookup_param_count = Cfg::tied_embeddings ? 0 : Cfg::vocab_size * Cfg::width;
  /// Expert parameters a token does not use (see moe_gpt::inactive_param_count).
  static constexpr std::size_t inactive_param_count =
      Cfg::depth * (Moe::experts - Moe::top_k) * (Moe::expert_in * Cfg::width + Cfg::width * Moe::ffn);
};

}  // namespace weft

#pragma once
// ---- GPT with mixture-of-experts MLPs ----
// moe_gpt<gpt_config<…>, Moe>: GPT-2's body (token and learned positional embeddings, pre-norm
// blocks of layernorm + attention, a final layernorm, the head tied to the token embedding) with
// every block's MLP replaced by `Moe`, a width-preserving layer such as
// moe_mlp<width, 8, 2, ffn> (model/moe.hpp). Parameter names are GPT-2's; the MLP's are
// `h.<i>.mlp.gate.weight`, `h.<i>.mlp.experts.…` (see moe_mlp).
#include "weft/model/attention.hpp"            // attention
#include "weft/model/block.hpp"                // block
#include "weft/model/ep_moe_mlp.hpp"           // ep_moe_mlp (the form plan<> runs under expert_parallel)
#include "weft/model/gpt.hpp"                  // gpt_config
#include "weft/model/layernorm.hpp"            // layernorm
#include "weft/model/lm_head.hpp"              // lm_head, tied
#include "weft/model/moe.hpp"                  // moe_mlp
#include "weft/model/named.hpp"                // named
#include "weft/model/positional_embedding.hpp" // positional_embedding
#include "weft/model/repeat.hpp"               // repeat
#include "weft/model/sequential.hpp"           // sequential
#include "weft/model/token_embedding.hpp"      // token_embedding

#include <cstddef>
#include <type_traits>

namespace weft {

namespace detail {
template <class Cfg, class Moe>
using moe_gpt_block = block<layernorm<Cfg::width, Cfg::block_norm_eps>,
                            attention<Cfg::width, Cfg::block_heads, Cfg::block_heads, no_rope, true,
                                      export_layout::transposed, Cfg::sliding_window>,
                            layernorm<Cfg::width, Cfg::block_norm_eps>, Moe>;
template <class Cfg, class Moe>
using moe_gpt_body = sequential<named<"wte", token_embedding<Cfg::vocab_size, Cfg::width>>,
                                named<"wpe", positional_embedding<Cfg::context_length, Cfg::width>>,
                                named<"h", repeat<Cfg::depth, moe_gpt_block<Cfg, Moe>>>, named<"ln_f", layernorm<Cfg::width, Cfg::block_norm_eps>>,
                                lm_head<Cfg::vocab_size, Cfg::width, tied<"wte.weight">>>;
// The MoE layer the blocks are built with: after a width mismatch (reported by moe_gpt), a
// stand-in of the right width, so that the compositions do not report the same mistake again.
template <class Cfg, class Moe>
inline constexpr bool moe_widths_match = Moe::in_width == Cfg::width && Moe::out_width == Cfg::width;
template <class Cfg, class Moe>
using moe_block_layer = std::conditional_t<moe_widths_match<Cfg, Moe>, Moe, moe_mlp<Cfg::width, 1, 1, 1>>;
}  // namespace detail

/// A GPT-2 model whose blocks use the mixture of experts `Moe` as their MLP:
/// token ids (batch, seq) -> logits (batch, seq, vocab).
template <class Cfg, class Moe>
struct moe_gpt : detail::moe_gpt_body<Cfg, detail::moe_block_layer<Cfg, Moe>> {
  static constexpr bool widths_match = detail::moe_widths_match<Cfg, Moe>;
  static_assert(widths_match,
                "weft::moe_gpt: the MoE layer's widths differ from the model width. Build it as moe_mlp<width, …>.");
  using config = Cfg;
  using moe_type = Moe;
  static constexpr std::size_t vocab_size = Cfg::vocab_size;
  static constexpr std::size_t context_length = Cfg::context_length;
  static constexpr std::size_t depth = Cfg::depth;
  static constexpr std::size_t width = Cfg::width;
  static constexpr std::size_t heads = Cfg::heads;
  static constexpr std::size_t kv_heads = Cfg::heads;
  static constexpr std::size_t ffn = Moe::ffn;
  static constexpr const char* family = "moe_gpt";
  /// Parameters only looked up, never multiplied (the learned positions; wte is also the head).
  static constexpr std::size_t lookup_param_count = Cfg::context_length * Cfg::width;
  /// Expert parameters a token does not use (E - k of E experts per block): the plan's FLOP
  /// count (6 · parameters) overstates an MoE step by 6 · this per token.
  static constexpr std::size_t inactive_param_count =
      Cfg::depth * (Moe::experts - Moe::top_k) * (Moe::expert_in * Cfg::width + Cfg::width * Moe::ffn);
};

}  // namespace weft

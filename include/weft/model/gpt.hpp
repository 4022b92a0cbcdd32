#pragma once
// ---- GPT-2 family ----
// gpt<gpt_config<vocab<50304>, context<1024>, width<768>, heads<12>, depth<12>>> is built only
// from public pieces: token and learned positional embeddings, `depth` pre-norm blocks of
// layernorm + multi-head attention + GELU MLP, a final layernorm, and an LM head tied to the
// token embedding. Parameter names and checkpoint layouts are Hugging Face GPT-2's.
#include "weft/core/diagnostics.hpp"           // diag::divisible
#include "weft/model/attention.hpp"            // attention
#include "weft/model/block.hpp"                // block
#include "weft/model/hyper.hpp"                // vocab, context, width, heads, depth, ffn
#include "weft/model/layernorm.hpp"            // layernorm
#include "weft/model/lm_head.hpp"              // lm_head, tied
#include "weft/model/mlp.hpp"                  // gelu_mlp
#include "weft/model/named.hpp"                // named
#include "weft/model/positional_embedding.hpp" // positional_embedding
#include "weft/model/repeat.hpp"               // repeat
#include "weft/model/sequential.hpp"           // sequential
#include "weft/model/token_embedding.hpp"      // token_embedding

#include <cstddef>

namespace weft {

/// Hyper-parameters of a GPT-2-style model; ffn defaults to 4·width.
template <class... Tags>
struct gpt_config {
  static constexpr std::size_t vocab_size = detail::find_tag<detail::vocab_tag, 0, Tags...>::value;
  static constexpr std::size_t context_length = detail::find_tag<detail::context_tag, 0, Tags...>::value;
  static constexpr std::size_t width = detail::find_tag<detail::width_tag, 0, Tags...>::value;
  static constexpr std::size_t heads = detail::find_tag<detail::heads_tag, 0, Tags...>::value;
  static constexpr std::size_t depth = detail::find_tag<detail::depth_tag, 0, Tags...>::value;
  static constexpr std::size_t ffn = detail::find_tag<detail::ffn_tag, 4 * width, Tags...>::value;
  /// Keys each query sees (`sliding_window<>`); 0, the default, is all before it.
  static constexpr std::size_t sliding_window = detail::find_tag<detail::sliding_window_tag, 0, Tags...>::value;

  /// The epsilon of every LayerNorm (`norm_eps<>`; 1e-5 by default, GPT-2's layer_norm_epsilon).
  static constexpr double norm_epsilon = detail::find_type_tag<detail::norm_eps_tag, norm_eps<1e-5>, Tags...>::type::eps;
  static constexpr bool norm_eps_valid = norm_epsilon > 0 && norm_epsilon < 1;
  static_assert(norm_eps_valid, "weft::gpt_config: norm_eps<> is not in (0, 1). Give the model's layer_norm_epsilon (1e-5 for GPT-2), or leave it out for 1e-5.");
  static constexpr double block_norm_eps = norm_eps_valid ? norm_epsilon : 1e-5;

  static constexpr bool all_given = vocab_size > 0 && context_length > 0 && width > 0 && heads > 0 && depth > 0;
  static_assert(all_given, "weft::gpt_config: a hyper-parameter is missing or zero. Give vocab<>, context<>, width<>, heads<> and depth<>, each at least 1.");
  static constexpr bool width_divisible_by_heads = diag::divisible<width, heads>;
  static_assert(width_divisible_by_heads, "weft::gpt_config: width is not divisible by heads. Choose heads that divides width (head size = width / heads).");
  static constexpr bool no_rope_theta = detail::find_tag<detail::rope_theta_tag, 0, Tags...>::count == 0 &&
                                       detail::find_tag<detail::rope_scaling_tag, 0, Tags...>::count == 0;
  static_assert(no_rope_theta, "weft::gpt_config: rope_theta<> or rope_scaling<> is given, but GPT-2 learns its positions and has no rotary embedding. Remove them, or use llama_config (or attention<..., rotary<Base>>) for rotary positions.");
  /// The heads the blocks are built with: after a failed check above, one (so that the layers'
  /// own checks do not report the same mistake again).
  static constexpr std::size_t block_heads = width_divisible_by_heads ? heads : 1;
};

namespace detail {
template <class Cfg>
using gpt_block = block<layernorm<Cfg::width, Cfg::block_norm_eps>,
                        attention<Cfg::width, Cfg::block_heads, Cfg::block_heads, no_rope, true, export_layout::transposed,
                                  Cfg::sliding_window>,
                        layernorm<Cfg::width, Cfg::block_norm_eps>, gelu_mlp<Cfg::width, Cfg::ffn, true, export_layout::transposed>>;

template <class Cfg>
using gpt_body = sequential<named<"wte", token_embedding<Cfg::vocab_size, Cfg::width>>,
                            named<"wpe", positional_embedding<Cfg::context_length, Cfg::width>>,
                            named<"h", repeat<Cfg::depth, gpt_block<Cfg>>>, named<"ln_f", layernorm<Cfg::width, Cfg::block_norm_eps>>,
                            lm_head<Cfg::vocab_size, Cfg::width, tied<"wte.weight">>>;
}  // namespace detail

/// A GPT-2 model: token ids (batch, seq) -> logits (batch, seq, vocab).
template <class Cfg>
struct gpt : detail::gpt_body<Cfg> {
  using config = Cfg;
  static constexpr std::size_t vocab_size = Cfg::vocab_size;
  static constexpr std::size_t context_length = Cfg::context_length;
  static constexpr std::size_t depth = Cfg::depth;
  static constexpr std::size_t width = Cfg::width;
  static constexpr std::size_t heads = Cfg::heads;
  static constexpr std::size_t kv_heads = Cfg::heads;
  static constexpr std::size_t ffn = Cfg::ffn;
  static constexpr const char* family = "gpt2";
  /// Parameters only looked up, never multiplied (the learned positions; wte is also the head).
  static constexpr std::size_t lookup_param_count = Cfg::context_length * Cfg::width;
};

}  // namespace weft

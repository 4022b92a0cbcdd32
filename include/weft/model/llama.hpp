#pragma once
// ---- LLaMA family ----
// llama<llama_config<vocab<…>, context<…>, width<…>, heads<…>, kv_heads<…>, depth<…>, ffn<…>>>:
// token embedding, `depth` pre-norm blocks of rmsnorm + grouped-query attention with rotary
// positions (no biases) + SwiGLU MLP, a final rmsnorm and an untied LM head.
#include "weft/core/diagnostics.hpp"       // diag::divisible
#include "weft/model/attention.hpp"        // attention
#include "weft/model/block.hpp"            // block
#include "weft/model/hyper.hpp"            // vocab, context, width, heads, kv_heads, depth, ffn
#include "weft/model/lm_head.hpp"          // lm_head, untied
#include "weft/model/mlp.hpp"              // swiglu_mlp
#include "weft/model/named.hpp"            // named
#include "weft/model/qk_norm.hpp"          // qk_norm_attention
#include "weft/model/repeat.hpp"           // repeat
#include "weft/model/rmsnorm.hpp"          // rmsnorm
#include "weft/model/rope.hpp"             // rope
#include "weft/model/sequential.hpp"       // sequential
#include "weft/model/token_embedding.hpp"  // token_embedding

#include <cstddef>
#include <type_traits>

namespace weft {

/// Hyper-parameters of a LLaMA-style model; kv_heads defaults to heads, ffn to 8/3·width
/// rounded up to a multiple of 64.
template <class... Tags>
struct llama_config {
  static constexpr std::size_t vocab_size = detail::find_tag<detail::vocab_tag, 0, Tags...>::value;
  static constexpr std::size_t context_length = detail::find_tag<detail::context_tag, 0, Tags...>::value;
  static constexpr std::size_t width = detail::find_tag<detail::width_tag, 0, Tags...>::value;
  static constexpr std::size_t heads = detail::find_tag<detail::heads_tag, 0, Tags...>::value;
  static constexpr std::size_t kv_heads = detail::find_tag<detail::kv_heads_tag, heads, Tags...>::value;
  static constexpr std::size_t depth = detail::find_tag<detail::depth_tag, 0, Tags...>::value;
  static constexpr std::size_t ffn = detail::find_tag<detail::ffn_tag, (8 * width / 3 + 63) / 64 * 64, Tags...>::value;
  static constexpr std::size_t rope_theta = detail::find_tag<detail::rope_theta_tag, 10000, Tags...>::value;
  /// The rotary frequencies' scaling (no_rope_scaling unless rope_scaling<> is given).
  using rope_scaling_type = typename detail::find_type_tag<detail::rope_scaling_tag, no_rope_scaling, Tags...>::type;
  /// Whether the head multiplies by the token table (`tie_word_embeddings<>`; untied by default).
  static constexpr bool tied_embeddings = detail::find_tag<detail::tie_tag, 0, Tags...>::value != 0;
  using head_tie = std::conditional_t<tied_embeddings, tied<"embed.weight">, untied>;
  /// Keys each query sees (`sliding_window<>`, Mistral); 0, the default, is all before it.
  static constexpr std::size_t sliding_window = detail::find_tag<detail::sliding_window_tag, 0, Tags...>::value;
  /// Whether c_attn has a bias (`qkv_bias<>`, Qwen 2); c_proj never has one.
  static constexpr bool attention_bias = detail::find_tag<detail::qkv_bias_tag, 0, Tags...>::value != 0;
  /// Whether each query and key head is RMS-normalised before the rotary embedding (`query_key_norm<>`).
  static constexpr bool qk_normalised = detail::find_tag<detail::qk_norm_tag, 0, Tags...>::value != 0;
  /// The epsilon of every RMSNorm (`norm_eps<>`; 1e-5 by default).
  static constexpr double norm_epsilon = detail::find_type_tag<detail::norm_eps_tag, norm_eps<1e-5>, Tags...>::type::eps;
  static constexpr bool norm_eps_valid = norm_epsilon > 0 && norm_epsilon < 1;
  static_assert(norm_eps_valid, "weft::llama_config: norm_eps<> is not in (0, 1). Give the model's rms_norm_eps (1e-5 for LLaMA and Mistral, 1e-6 for Qwen and Gemma), or leave it out for 1e-5.");
  static constexpr double block_norm_eps = norm_eps_valid ? norm_epsilon : 1e-5;
  /// The head size given by `head_dim<>` (0: width / heads).
  static constexpr std::size_t head_dim_given = detail::find_tag<detail::head_dim_tag, 0, Tags...>::value;

  static constexpr bool all_given = vocab_size > 0 && context_length > 0 && width > 0 && heads > 0 && kv_heads > 0 && depth > 0;
  static_assert(all_given, "weft::llama_config: a hyper-parameter is missing or zero. Give vocab<>, context<>, width<>, heads<> and depth<>, each at least 1.");
  static constexpr bool width_divisible_by_heads = head_dim_given > 0 || diag::divisible<width, heads>;
  static_assert(width_divisible_by_heads, "weft::llama_config: width is not divisible by heads. Choose heads that divides width (head size = width / heads), or give the head size with head_dim<>.");
  /// Elements of an attention head.
  static constexpr std::size_t head_size = head_dim_given > 0 ? head_dim_given : heads > 0 ? width / heads : 0;
  static constexpr bool heads_divisible_by_kv_heads = diag::divisible<heads, kv_heads>;
  static_assert(heads_divisible_by_kv_heads, "weft::llama_config: heads is not divisible by kv_heads. Choose kv_heads that divides heads (each kv head serves heads / kv_heads query heads).");
  static constexpr bool head_size_even = diag::divisible<head_size, 2>;
  static_assert(head_size_even, "weft::llama_config: the head size (width / heads, or head_dim) is odd, but rotary embeddings rotate pairs. Choose width and heads so that width / heads is even, or an even head_dim.");
  static constexpr bool rope_theta_valid = rope_theta >= 2;
  static_assert(rope_theta_valid, "weft::llama_config: rope_theta is below 2. Give the model's rope_theta<> (10000 for LLaMA 2, 500000 for LLaMA 3), or leave it out for 10000.");
  /// What the blocks are built with: after a failed check above, shapes that pass the layers'
  /// own checks (so that they do not report the same mistake again).
  static constexpr bool shape_ok = width_divisible_by_heads && heads_divisible_by_kv_heads && head_size_even;
  static constexpr std::size_t block_heads = shape_ok ? heads : 1;
  static constexpr std::size_t block_kv_heads = shape_ok ? kv_heads : 1;
  static constexpr std::size_t block_head_dim = shape_ok ? head_dim_given : 0;
  using block_position = std::conditional_t<shape_ok, rotary<rope_theta_valid ? rope_theta : 10000, 0, rope_scaling_type>, no_rope>;
};

namespace detail {
// The attention of a block: attention<> or, with query_key_norm<>, qk_norm_attention<>.
template <class Cfg>
using llama_attention = std::conditional_t<
    Cfg::qk_normalised,
    qk_norm_attention<Cfg::width, Cfg::block_heads, Cfg::block_kv_heads, typename Cfg::block_position,
                      Cfg::attention_bias, Cfg::sliding_window, Cfg::block_head_dim, false, Cfg::block_norm_eps>,
    attention<Cfg::width, Cfg::block_heads, Cfg::block_kv_heads, typename Cfg::block_position, Cfg::attention_bias,
              export_layout::as_is, Cfg::sliding_window, Cfg::block_head_dim, false>>;

template <class Cfg>
using llama_block = block<rmsnorm<Cfg::width, Cfg::block_norm_eps>, llama_attention<Cfg>,
                          rmsnorm<Cfg::width, Cfg::block_norm_eps>, swiglu_mlp<Cfg::width, Cfg::ffn>>;

template <class Cfg>
using llama_body = sequential<named<"embed", token_embedding<Cfg::vocab_size, Cfg::width>>,
                              named<"layers", repeat<Cfg::depth, llama_block<Cfg>>>, named<"norm", rmsnorm<Cfg::width, Cfg::block_norm_eps>>,
                              named<"head", lm_head<Cfg::vocab_size, Cfg::width, typename Cfg::head_tie>>>;
}  // namespace detail

/// A LLaMA model: token ids (batch, seq) -> logits (batch, seq, vocab).
template <class Cfg>
struct llama : detail::llama_body<Cfg> {
  using config = Cfg;
  static constexpr std::size_t vocab_size = Cfg::vocab_size;
  static constexpr std::size_t context_length = Cfg::context_length;
  static constexpr std::size_t depth = Cfg::depth;
  static constexpr std::size_t width = Cfg::width;
  static constexpr std::size_t heads = Cfg::heads;
  static constexpr std::size_t kv_heads = Cfg::kv_heads;
  static constexpr std::size_t ffn = Cfg::ffn;
  static constexpr std::size_t head_dim = Cfg::head_size;
  static constexpr const char* family = "llama";
  /// Parameters only looked up, never multiplied (the untied token embedding; none when the head
  /// multiplies by it).
  static constexpr std::size_t lookup_param_count = Cfg::tied_embeddings ? 0 : Cfg::vocab_size * Cfg::width;
};

}  // namespace weft

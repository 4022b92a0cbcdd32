#pragma once
// ---- Gemma 3 (text) family ----
// gemma3<gemma3_config<vocab<262144>, context<32768>, width<1152>, heads<4>, kv_heads<1>, depth<26>,
// ffn<6912>>> (gemma-3-1b): transformers' Gemma3ForCausalLM (model_type gemma3_text).
//   embedding · sqrt(width)                                   (embedding_scale, rounded to the element type)
//   `depth` blocks, each with four RMSNorms ("sandwich"):
//     h   = x + post_attention_norm(attn(input_norm(x)))
//     out = h + post_feedforward_norm(mlp(pre_feedforward_norm(h)))
//   a final RMSNorm and a head tied to the embedding (no logit soft-capping: Gemma 3 has none).
// Every RMSNorm (blocks, final, and the per-head q/k norms) is Gemma's x̂·(1 + w), w initialised
// to 0 (rmsnorm<C, Eps, true>, qk_norm<…, true>). Attention is grouped-query with a head size of
// its own (head_dim, 256), q and k RMS-normalised per head before the rotary embedding, no
// biases, scores scaled by 1/sqrt(head_dim) (query_pre_attn_scalar must equal head_dim). Block i
// is GLOBAL when (i + 1) % pattern == 0 — full causal attention, rotary base rope_theta, the
// rope_scaling<> if given — and LOCAL otherwise: a sliding window of `sliding_window` keys (itself
// included), rotary base rope_local_base_freq, never scaled. The blocks stay one type (one
// repeat<depth, Block>): the attention core is local_global_attention, which picks its form
// from the block's index (frame::layer). The MLP is GeGLU with tanh GELU (gelu_pytorch_tanh).
//
// Parameter names (weft -> transformers, io loaders split the packed ones):
//   embed.weight                                   model.embed_tokens.weight (the head's too)
//   layers.{i}.input_layernorm.weight              model.layers.{i}.input_layernorm.weight
//   layers.{i}.self_attn.c_attn.weight             q_proj | k_proj | v_proj (rows packed in that order)
//   layers.{i}.self_attn.qk_norm.q_weight/k_weight self_attn.q_norm.weight / self_attn.k_norm.weight
//   layers.{i}.self_attn.c_proj.weight             self_attn.o_proj.weight
//   layers.{i}.post_attention_layernorm.weight     (same name)
//   layers.{i}.pre_feedforward_layernorm.weight    (same name)
//   layers.{i}.post_feedforward_layernorm.weight   (same name)
//   layers.{i}.mlp.gate_up.weight                  mlp.gate_proj | mlp.up_proj (rows packed)
//   layers.{i}.mlp.down.weight                     mlp.down_proj.weight
//   norm.weight                                    model.norm.weight
// The norm weights are w itself (transformers stores w, not 1 + w), so they load unchanged.
#include "weft/core/diagnostics.hpp"             // diag::divisible
#include "weft/core/rope_scaling.hpp"            // no_rope_scaling, linear_rope_scaling
#include "weft/model/causal_attention.hpp"       // causal_attention
#include "weft/model/embedding_scale.hpp"        // embedding_scale
#include "weft/model/hyper.hpp"                  // vocab, …, layer_pattern, rope_local_base_freq, query_pre_attn_scalar
#include "weft/model/linear.hpp"                 // linear, packed
#include "weft/model/lm_head.hpp"                // lm_head, tied
#include "weft/model/local_global_attention.hpp" // local_global_attention
#include "weft/model/mlp.hpp"                    // geglu_mlp
#include "weft/model/named.hpp"                  // named
#include "weft/model/qk_norm.hpp"                // qk_norm
#include "weft/model/repeat.hpp"                 // repeat
#include "weft/model/residual.hpp"               // residual
#include "weft/model/rmsnorm.hpp"                // rmsnorm
#include "weft/model/rope.hpp"                   // rotary
#include "weft/model/sequential.hpp"             // sequential
#include "weft/model/token_embedding.hpp"        // token_embedding

#include <cstddef>
#include <type_traits>

namespace weft {

/// Hyper-parameters of a Gemma 3 text model. Required: vocab<>, context<>, width<>, heads<>,
/// depth<>, ffn<>. Defaults (gemma-3-1b's, shared by the family): kv_heads = heads, head_dim<256>,
/// sliding_window<512>, layer_pattern<6>, rope_theta<1000000> (global layers),
/// rope_local_base_freq<10000> (local layers), norm_eps<1e-6>, query_pre_attn_scalar = head_dim,
/// no rope scaling (rope_scaling<linear_rope_scaling<8>> for Gemma 3 4B and up: global layers).
template <class... Tags>
struct gemma3_config {
  static constexpr std::size_t vocab_size = detail::find_tag<detail::vocab_tag, 0, Tags...>::value;
  static constexpr std::size_t context_length = detail::find_tag<detail::context_tag, 0, Tags...>::value;
  static constexpr std::size_t width = detail::find_tag<detail::width_tag, 0, Tags...>::value;
  static constexpr std::size_t heads = detail::find_tag<detail::heads_tag, 0, Tags...>::value;
  static constexpr std::size_t kv_heads = detail::find_tag<detail::kv_heads_tag, heads, Tags...>::value;
  static constexpr std::size_t depth = detail::find_tag<detail::depth_tag, 0, Tags...>::value;
  static constexpr std::size_t ffn = detail::find_tag<detail::ffn_tag, 0, Tags...>::value;
  /// Elements of an attention head (`head_dim<>`; 256 by default).
  static constexpr std::size_t head_size = detail::find_tag<detail::head_dim_tag, 256, Tags...>::value;
  /// Keys a local layer's query sees, itself included (`sliding_window<>`; 512 by default).
  static constexpr std::size_t sliding_window = detail::find_tag<detail::sliding_window_tag, 512, Tags...>::value;
  /// Every pattern-th block is global (`layer_pattern<>`, sliding_window_pattern; 6 by default).
  static constexpr std::size_t pattern = detail::find_tag<detail::layer_pattern_tag, 6, Tags...>::value;
  /// The global layers' rotary base (`rope_theta<>`; 1000000 by default).
  static constexpr std::size_t rope_theta = detail::find_tag<detail::rope_theta_tag, 1000000, Tags...>::value;
  /// The local layers' rotary base (`rope_local_base_freq<>`; 10000 by default).
  static constexpr std::size_t rope_local_base = detail::find_tag<detail::rope_local_base_tag, 10000, Tags...>::value;
  /// The global layers' frequency scaling (`rope_scaling<>`; none by default).
  using rope_scaling_type = typename detail::find_type_tag<detail::rope_scaling_tag, no_rope_scaling, Tags...>::type;
  /// The configs' query_pre_attn_scalar (`query_pre_attn_scalar<>`; head_dim by default).
  static constexpr std::size_t query_scalar = detail::find_tag<detail::query_pre_attn_scalar_tag, head_size, Tags...>::value;
  /// The epsilon of every RMSNorm (`norm_eps<>`; 1e-6 by default).
  static constexpr double norm_epsilon = detail::find_type_tag<detail::norm_eps_tag, norm_eps<1e-6>, Tags...>::type::eps;
  /// The head multiplies by the token table (always: Gemma 3 ties them).
  static constexpr bool tied_embeddings = true;
  /// Blocks with full attention among the `depth`: those with (i + 1) % pattern == 0.
  static constexpr std::size_t global_layers = pattern > 0 ? depth / pattern : 0;

  static constexpr bool all_given = vocab_size > 0 && context_length > 0 && width > 0 && heads > 0 && kv_heads > 0 &&
                                    depth > 0 && ffn > 0 && head_size > 0;
  static_assert(all_given, "weft::gemma3_config: a hyper-parameter is missing or zero. Give vocab<>, context<>, width<>, heads<>, depth<> and ffn<> (the configs' intermediate_size), each at least 1 (and kv_heads<>, head_dim<> at least 1 if given).");
  static constexpr bool heads_divisible_by_kv_heads = diag::divisible<heads, kv_heads>;
  static_assert(heads_divisible_by_kv_heads, "weft::gemma3_config: heads is not divisible by kv_heads. Choose kv_heads that divides heads (the configs' num_key_value_heads: 1 for gemma-3-1b).");
  static constexpr bool head_size_even = diag::divisible<head_size, 2>;
  static_assert(head_size_even, "weft::gemma3_config: head_dim is odd, but rotary embeddings rotate pairs. Give an even head_dim<> (256 for Gemma 3), or leave it out.");
  static constexpr bool query_scalar_is_head_dim = query_scalar == head_size;
  static_assert(query_scalar_is_head_dim, "weft::gemma3_config: query_pre_attn_scalar differs from head_dim, but weft scales attention scores by 1/sqrt(head_dim). Give query_pre_attn_scalar<> equal to head_dim<> (as every Gemma 3 has), or leave it out.");
  static constexpr bool pattern_positive = pattern > 0;
  static_assert(pattern_positive, "weft::gemma3_config: layer_pattern<> is 0. Give the configs' sliding_window_pattern (6 for Gemma 3: every sixth layer global), at least 1, or leave it out.");
  static constexpr bool window_positive = sliding_window > 0;
  static_assert(window_positive, "weft::gemma3_config: sliding_window<> is 0, but the local layers need a window. Give the configs' sliding_window (512 for Gemma 3), or leave it out.");
  static constexpr bool rope_theta_valid = rope_theta >= 2;
  static_assert(rope_theta_valid, "weft::gemma3_config: rope_theta is below 2. Give the global layers' rope_theta<> (1000000 for Gemma 3), or leave it out.");
  static constexpr bool rope_local_base_valid = rope_local_base >= 2;
  static_assert(rope_local_base_valid, "weft::gemma3_config: rope_local_base_freq is below 2. Give the local layers' rope_local_base_freq<> (10000 for Gemma 3), or leave it out.");
  static constexpr bool norm_eps_valid = norm_epsilon > 0 && norm_epsilon < 1;
  static_assert(norm_eps_valid, "weft::gemma3_config: norm_eps<> is not in (0, 1). Give the model's rms_norm_eps (1e-6 for Gemma 3), or leave it out for 1e-6.");
  static constexpr bool no_foreign_tags =
      detail::find_tag<detail::qkv_bias_tag, 0, Tags...>::count + detail::find_tag<detail::qk_norm_tag, 0, Tags...>::count +
          detail::find_tag<detail::tie_tag, 0, Tags...>::count + detail::find_tag<detail::rotary_pct_tag, 0, Tags...>::count ==
      0;
  static_assert(no_foreign_tags, "weft::gemma3_config: a tag Gemma 3 fixes is given (qkv_bias<>, query_key_norm<>, tie_word_embeddings<> or rotary_pct<>): Gemma 3 has no biases, always normalises q and k, ties its head and rotates whole heads. Remove it.");

  /// What the blocks are built with: after a failed check above, values that pass the layers'
  /// own checks (so that they do not report the same mistake again).
  static constexpr bool shape_ok = all_given && heads_divisible_by_kv_heads && head_size_even;
  static constexpr std::size_t block_width = width > 0 ? width : 1;
  static constexpr std::size_t block_ffn = ffn > 0 ? ffn : 1;
  static constexpr std::size_t block_heads = shape_ok ? heads : 1;
  static constexpr std::size_t block_kv_heads = shape_ok ? kv_heads : 1;
  static constexpr std::size_t block_head_size = shape_ok ? head_size : 2;
  static constexpr std::size_t block_depth = depth > 0 ? depth : 1;
  static constexpr std::size_t block_pattern = pattern > 0 ? pattern : 1;
  static constexpr std::size_t block_window = sliding_window > 0 ? sliding_window : 1;
  static constexpr double block_norm_eps = norm_eps_valid ? norm_epsilon : 1e-6;
  using local_position = rotary<rope_local_base_valid ? rope_local_base : 10000>;
  using global_position = rotary<rope_theta_valid ? rope_theta : 1000000, 0, rope_scaling_type>;
};

namespace detail {
// Gemma's RMSNorm: x̂·(1 + w).
template <class Cfg>
using gemma3_norm = rmsnorm<Cfg::block_width, Cfg::block_norm_eps, true>;

// The attention core: local (window, local base) or global (whole past, global base and scaling) by the block's index.
template <class Cfg>
using gemma3_core = local_global_attention<
    Cfg::block_pattern,
    causal_attention<Cfg::block_heads, Cfg::block_kv_heads, Cfg::block_head_size, typename Cfg::local_position, Cfg::block_window>,
    causal_attention<Cfg::block_heads, Cfg::block_kv_heads, Cfg::block_head_size, typename Cfg::global_position, 0>>;

// self_attn: c_attn (q|k|v) -> qk_norm (unit offset) -> the core (rope inside) -> c_proj; no biases.
template <class Cfg>
using gemma3_attention = sequential<
    named<"c_attn", linear<Cfg::block_width, (Cfg::block_heads + 2 * Cfg::block_kv_heads) * Cfg::block_head_size, role::column,
                           false, init::normal<20>, export_layout::as_is,
                           packed<Cfg::block_heads * Cfg::block_head_size, Cfg::block_kv_heads * Cfg::block_head_size,
                                  Cfg::block_kv_heads * Cfg::block_head_size>>>,
    named<"qk_norm", qk_norm<Cfg::block_heads, Cfg::block_kv_heads, Cfg::block_head_size, Cfg::block_norm_eps, true>>,
    gemma3_core<Cfg>,
    named<"c_proj", linear<Cfg::block_heads * Cfg::block_head_size, Cfg::block_width, role::row, false, init::normal_residual<20>>>>;

// The sandwich block: four norms, two residuals.
template <class Cfg>
using gemma3_block = sequential<
    residual<sequential<named<"input_layernorm", gemma3_norm<Cfg>>, named<"self_attn", gemma3_attention<Cfg>>,
                        named<"post_attention_layernorm", gemma3_norm<Cfg>>>>,
    residual<sequential<named<"pre_feedforward_layernorm", gemma3_norm<Cfg>>, named<"mlp", geglu_mlp<Cfg::block_width, Cfg::block_ffn>>,
                        named<"post_feedforward_layernorm", gemma3_norm<Cfg>>>>>;

template <class Cfg>
using gemma3_body = sequential<named<"embed", token_embedding<Cfg::vocab_size, Cfg::block_width>>, embedding_scale<Cfg::block_width>,
                               named<"layers", repeat<Cfg::block_depth, gemma3_block<Cfg>>>, named<"norm", gemma3_norm<Cfg>>,
                               named<"head", lm_head<Cfg::vocab_size, Cfg::block_width, tied<"embed.weight">>>>;
}  // namespace detail

/// A Gemma 3 text model: token ids (batch, seq) -> logits (batch, seq, vocab). Names: see the top
/// of the file.
template <class Cfg>
struct gemma3 : detail::gemma3_body<Cfg> {
  using config = Cfg;
  static constexpr std::size_t vocab_size = Cfg::vocab_size;
  static constexpr std::size_t context_length = Cfg::context_length;
  static constexpr std::size_t depth = Cfg::depth;
  static constexpr std::size_t width = Cfg::width;
  static constexpr std::size_t heads = Cfg::heads;
  static constexpr std::size_t kv_heads = Cfg::kv_heads;
  static constexpr std::size_t ffn = Cfg::ffn;
  static constexpr std::size_t head_dim = Cfg::head_size;
  static constexpr const char* family = "gemma3";
  /// None: the head multiplies by the embedding's table.
  static constexpr std::size_t lookup_param_count = 0;
};

}  // namespace weft

#pragma once
// ---- GPT-NeoX family (EleutherAI's GPT-NeoX-20B and the Pythia suite) ----
// gpt_neox<neox_config<vocab<50304>, context<2048>, width<512>, heads<8>, depth<6>>> (Pythia-70M):
// a token embedding without a position table, `depth` parallel-residual blocks
//   x + attn(ln_1(x)) + mlp(ln_2(x))            (two LayerNorms with biases, one residual)
// whose attention has biases and a rotary embedding on the first int(head size · rotary_pct)
// elements of each query and key head (rotate-half within them, base 10000), whose MLP is
// width -> 4·width -> GELU (exact, erf) -> width with biases, then a final LayerNorm and an
// untied LM head without a bias. These are transformers' GPTNeoXForCausalLM with
// use_parallel_residual = true (every published GPT-NeoX and Pythia checkpoint);
// io/hf_neox.hpp maps the names.
#include "weft/core/diagnostics.hpp"         // diag::divisible
#include "weft/core/gelu_form.hpp"           // gelu_form::erf
#include "weft/model/attention.hpp"          // attention
#include "weft/model/hyper.hpp"              // vocab, context, width, heads, depth, ffn, rope_theta, norm_eps, rotary_pct
#include "weft/model/layernorm.hpp"          // layernorm
#include "weft/model/lm_head.hpp"            // lm_head, untied
#include "weft/model/mlp.hpp"                // gelu_mlp
#include "weft/model/named.hpp"              // named
#include "weft/model/parallel_branches.hpp"  // branch_sum
#include "weft/model/repeat.hpp"             // repeat
#include "weft/model/residual.hpp"           // residual
#include "weft/model/rope.hpp"               // rotary
#include "weft/model/sequential.hpp"         // sequential
#include "weft/model/token_embedding.hpp"    // token_embedding

#include <cstddef>
#include <type_traits>

namespace weft {

/// Hyper-parameters of a GPT-NeoX-style model; ffn defaults to 4·width, rotary_pct to 0.25 (of
/// each head), rope_theta to 10000 and norm_eps to 1e-5, Pythia's values.
template <class... Tags>
struct neox_config {
  static constexpr std::size_t vocab_size = detail::find_tag<detail::vocab_tag, 0, Tags...>::value;
  static constexpr std::size_t context_length = detail::find_tag<detail::context_tag, 0, Tags...>::value;
  static constexpr std::size_t width = detail::find_tag<detail::width_tag, 0, Tags...>::value;
  static constexpr std::size_t heads = detail::find_tag<detail::heads_tag, 0, Tags...>::value;
  static constexpr std::size_t depth = detail::find_tag<detail::depth_tag, 0, Tags...>::value;
  static constexpr std::size_t ffn = detail::find_tag<detail::ffn_tag, 4 * width, Tags...>::value;
  /// The rotary embedding's base (`rope_theta<>`, the configs' rotary_emb_base; 10000 by default).
  static constexpr std::size_t rope_theta = detail::find_tag<detail::rope_theta_tag, 10000, Tags...>::value;
  /// The fraction of each head that rotates (`rotary_pct<>`; 0.25 by default).
  static constexpr double rotary_fraction = detail::find_type_tag<detail::rotary_pct_tag, rotary_pct<0.25>, Tags...>::type::pct;
  /// The epsilon of every LayerNorm (`norm_eps<>`, the configs' layer_norm_eps; 1e-5 by default).
  static constexpr double norm_epsilon = detail::find_type_tag<detail::norm_eps_tag, norm_eps<1e-5>, Tags...>::type::eps;

  static constexpr bool all_given = vocab_size > 0 && context_length > 0 && width > 0 && heads > 0 && depth > 0 && ffn > 0;
  static_assert(all_given, "weft::neox_config: a hyper-parameter is missing or zero. Give vocab<>, context<>, width<>, heads<> and depth<>, each at least 1.");
  static constexpr bool width_divisible_by_heads = diag::divisible<width, heads>;
  static_assert(width_divisible_by_heads, "weft::neox_config: width is not divisible by heads. Choose heads that divides width (head size = width / heads).");
  static constexpr bool no_llama_tags =
      detail::find_tag<detail::kv_heads_tag, 0, Tags...>::count + detail::find_tag<detail::head_dim_tag, 0, Tags...>::count +
          detail::find_tag<detail::qkv_bias_tag, 0, Tags...>::count + detail::find_tag<detail::qk_norm_tag, 0, Tags...>::count +
          detail::find_tag<detail::tie_tag, 0, Tags...>::count + detail::find_tag<detail::sliding_window_tag, 0, Tags...>::count +
          detail::find_tag<detail::rope_scaling_tag, 0, Tags...>::count ==
      0;
  static_assert(no_llama_tags, "weft::neox_config: a tag GPT-NeoX has no counterpart for is given (kv_heads<>, head_dim<>, qkv_bias<>, query_key_norm<>, tie_word_embeddings<>, sliding_window<> or rope_scaling<>). Remove it, or use llama_config for those features.");
  static constexpr bool norm_eps_valid = norm_epsilon > 0 && norm_epsilon < 1;
  static_assert(norm_eps_valid, "weft::neox_config: norm_eps<> is not in (0, 1). Give the model's layer_norm_eps (1e-5 for Pythia and GPT-NeoX-20B), or leave it out for 1e-5.");
  static constexpr bool rope_theta_valid = rope_theta >= 2;
  static_assert(rope_theta_valid, "weft::neox_config: rope_theta is below 2. Give the model's rotary_emb_base as rope_theta<> (10000 for Pythia), or leave it out for 10000.");
  static constexpr bool rotary_pct_valid = rotary_fraction > 0 && rotary_fraction <= 1;
  static_assert(rotary_pct_valid, "weft::neox_config: rotary_pct<> is not in (0, 1]. Give the model's rotary_pct (0.25 for Pythia), or leave it out for 0.25.");

  /// Elements of an attention head.
  static constexpr std::size_t head_size = width_divisible_by_heads && heads > 0 ? width / heads : 0;
  /// Elements of each query and key head that rotate: int(head size · rotary_pct), as transformers.
  static constexpr std::size_t rotary_dims = static_cast<std::size_t>(double(head_size) * rotary_fraction);
  static constexpr bool rotary_dims_even = !rotary_pct_valid || head_size == 0 || (rotary_dims >= 2 && rotary_dims % 2 == 0);
  static_assert(rotary_dims_even, "weft::neox_config: int(head size · rotary_pct) is odd or 0, but rotary embeddings rotate pairs. Choose rotary_pct, width and heads so that it is an even number of at least 2 (Pythia: 0.25 of a head of 64 is 16).");

  /// What the blocks are built with: after a failed check above, shapes that pass the layers'
  /// own checks (so that they do not report the same mistake again).
  static constexpr bool shape_ok = width_divisible_by_heads && rotary_pct_valid && rotary_dims_even;
  static constexpr std::size_t block_heads = shape_ok ? heads : 1;
  static constexpr std::size_t block_rotary_dims = shape_ok ? rotary_dims : 0;
  static constexpr double block_norm_eps = norm_eps_valid ? norm_epsilon : 1e-5;
  static constexpr std::size_t block_depth = depth > 0 ? depth : 1;
  using block_position = std::conditional_t<shape_ok, rotary<rope_theta_valid ? rope_theta : 10000, block_rotary_dims>, no_rope>;
};

namespace detail {
// attention.query_key_value / attention.dense (both with biases), rotary inside.
template <class Cfg>
using neox_attention = attention<Cfg::width, Cfg::block_heads, Cfg::block_heads, typename Cfg::block_position, true>;
// mlp.dense_h_to_4h -> GELU, exact (erf: transformers' hidden_act "gelu") -> mlp.dense_4h_to_h, with biases.
template <class Cfg>
using neox_mlp = gelu_mlp<Cfg::width, Cfg::ffn, true, export_layout::as_is, gelu_form::erf>;

// x + attn(ln_1(x)) + mlp(ln_2(x)): each branch normalises the same x with its own LayerNorm.
template <class Cfg>
using neox_block = residual<branch_sum<sequential<named<"ln_1", layernorm<Cfg::width, Cfg::block_norm_eps>>, named<"attn", neox_attention<Cfg>>>,
                                       sequential<named<"ln_2", layernorm<Cfg::width, Cfg::block_norm_eps>>, named<"mlp", neox_mlp<Cfg>>>>>;

template <class Cfg>
using neox_body = sequential<named<"embed", token_embedding<Cfg::vocab_size, Cfg::width>>,
                             named<"layers", repeat<Cfg::block_depth, neox_block<Cfg>>>,
                             named<"norm", layernorm<Cfg::width, Cfg::block_norm_eps>>,
                             named<"head", lm_head<Cfg::vocab_size, Cfg::width, untied>>>;
}  // namespace detail

/// A GPT-NeoX model: token ids (batch, seq) -> logits (batch, seq, vocab). Parameter names:
/// embed.weight, layers.{i}.ln_1/ln_2.{weight,bias}, layers.{i}.attn.c_attn/c_proj.{weight,bias},
/// layers.{i}.mlp.c_fc/c_proj.{weight,bias}, norm.{weight,bias}, head.weight.
template <class Cfg>
struct gpt_neox : detail::neox_body<Cfg> {
  using config = Cfg;
  static constexpr std::size_t vocab_size = Cfg::vocab_size;
  static constexpr std::size_t context_length = Cfg::context_length;
  static constexpr std::size_t depth = Cfg::depth;
  static constexpr std::size_t width = Cfg::width;
  static constexpr std::size_t heads = Cfg::heads;
  static constexpr std::size_t kv_heads = Cfg::heads;
  static constexpr std::size_t ffn = Cfg::ffn;
  static constexpr std::size_t head_dim = Cfg::head_size;
  static constexpr const char* family = "gpt_neox";
  /// Parameters only looked up, never multiplied (the untied token embedding).
  static constexpr std::size_t lookup_param_count = Cfg::vocab_size * Cfg::width;
};

}  // namespace weft

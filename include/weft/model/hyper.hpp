#pragma once
// ---- model hyper-parameters as tags: gpt_config<vocab<50304>, context<1024>, width<768>, ...> ----
#include <cstddef>
#include <type_traits>

namespace weft {

namespace detail {
template <class Tag, std::size_t N>
struct size_tag {
  using tag = Tag;
  static constexpr std::size_t value = N;
};
struct vocab_tag {};
struct context_tag {};
struct width_tag {};
struct heads_tag {};
struct kv_heads_tag {};
struct depth_tag {};
struct ffn_tag {};
struct rope_theta_tag {};
struct rope_scaling_tag {};
struct tie_tag {};
struct sliding_window_tag {};
struct head_dim_tag {};
struct qkv_bias_tag {};
struct qk_norm_tag {};
struct norm_eps_tag {};

// Value of the first tag of kind `Tag` in `Ts`, else `Default`; `count` says how many there are.
template <class Tag, std::size_t Default, class... Ts>
struct find_tag {
  static constexpr std::size_t count = (std::size_t{0} + ... + (std::is_same_v<typename Ts::tag, Tag> ? 1u : 0u));
  static constexpr std::size_t value = [] {
    std::size_t v = Default;
    bool found = false;
    ((!found && std::is_same_v<typename Ts::tag, Tag> ? (v = Ts::value, found = true) : false), ...);
    return v;
  }();
};
// The type of the first tag of kind `Tag` in `Ts` (its `type`), else `Default`.
template <class Tag, class Default, class... Ts>
struct find_type_tag {
  using type = Default;
};
template <class Tag, class Default, class T, class... Ts>
struct find_type_tag<Tag, Default, T, Ts...> {
  using type = typename std::conditional_t<std::is_same_v<typename T::tag, Tag>, T,
                                           find_type_tag<Tag, Default, Ts...>>::type;
};
}  // namespace detail

/// Vocabulary size.
template <std::size_t N> struct vocab : detail::size_tag<detail::vocab_tag, N> {};
/// Longest sequence (learned positions are sized by it).
template <std::size_t N> struct context : detail::size_tag<detail::context_tag, N> {};
/// Model width (d_model).
template <std::size_t N> struct width : detail::size_tag<detail::width_tag, N> {};
/// Attention (query) heads.
template <std::size_t N> struct heads : detail::size_tag<detail::heads_tag, N> {};
/// Key/value heads (grouped-query attention); equal to heads by default.
template <std::size_t N> struct kv_heads : detail::size_tag<detail::kv_heads_tag, N> {};
/// Number of transformer blocks.
template <std::size_t N> struct depth : detail::size_tag<detail::depth_tag, N> {};
/// Hidden width of the MLP.
template <std::size_t N> struct ffn : detail::size_tag<detail::ffn_tag, N> {};
/// Base of the rotary embedding's angles (Hugging Face configs' `rope_theta`; 10000 by default,
/// 500000 for LLaMA 3).
template <std::size_t N> struct rope_theta : detail::size_tag<detail::rope_theta_tag, N> {};
/// Whether the output head multiplies by the token embedding's table (the configs'
/// `tie_word_embeddings`: LLaMA 3.2 1B/3B, Qwen 2 0.5B/1.5B, Gemma); llama_config unties by default.
template <bool On = true> struct tie_word_embeddings : detail::size_tag<detail::tie_tag, On ? 1 : 0> {};
/// Keys each query attends to, itself included (the configs' `sliding_window`: Mistral 7B v0.1's
/// 4096); none by default.
template <std::size_t N> struct sliding_window : detail::size_tag<detail::sliding_window_tag, N> {};
/// Elements of an attention head, apart from width / heads (the configs' `head_dim`: Qwen 3,
/// Gemma); width / heads by default.
template <std::size_t N> struct head_dim : detail::size_tag<detail::head_dim_tag, N> {};
/// A bias on the q, k and v projections (not the output projection), as Qwen 2; none by default.
template <bool On = true> struct qkv_bias : detail::size_tag<detail::qkv_bias_tag, On ? 1 : 0> {};
/// RMSNorm of every query and key head before the rotary embedding (qk_norm_attention: Qwen 3,
/// OLMo 2); none by default.
template <bool On = true> struct query_key_norm : detail::size_tag<detail::qk_norm_tag, On ? 1 : 0> {};
/// The epsilon inside every normalisation's square root (the configs' `rms_norm_eps`,
/// `layer_norm_epsilon`): norm_eps<1e-6> for Qwen 2/3 and Gemma; 1e-5 by default (LLaMA, Mistral,
/// GPT-2). A llama's QK-norm takes it too, as Qwen 3's q_norm/k_norm do.
template <double E> struct norm_eps {
  using tag = detail::norm_eps_tag;
  using type = norm_eps;
  static constexpr std::size_t value = 0;
  static constexpr double eps = E;
};
/// How the rotary frequencies are rescaled for a longer context (the configs' `rope_scaling`):
/// rope_scaling<llama3_rope_scaling<8>> for LLaMA 3.1 (core/rope_scaling.hpp).
template <class Scaling> struct rope_scaling {
  using tag = detail::rope_scaling_tag;
  static constexpr std::size_t value = 0;
  using type = Scaling;
};

// ---- GPT-NeoX's tags (appended: the tags above keep their order) ----
namespace detail {
struct rotary_pct_tag {};
}  // namespace detail

/// The fraction of each attention head the rotary embedding turns (the configs' `rotary_pct`):
/// the first int(head size · P) elements of every query and key head rotate, the rest pass
/// through (GPT-NeoX's partial rotary). rotary_pct<0.25> for Pythia and GPT-NeoX-20B, which
/// neox_config takes by default; rotary_pct<1.0> rotates the whole head.
template <double P> struct rotary_pct {
  using tag = detail::rotary_pct_tag;
  using type = rotary_pct;
  static constexpr std::size_t value = 0;
  static constexpr double pct = P;
};


// ---- Gemma 3's tags (appended: the tags above keep their order) ----
namespace detail {
struct layer_pattern_tag {};
struct rope_local_base_tag {};
struct query_pre_attn_scalar_tag {};
}  // namespace detail

/// Every N-th layer attends globally, the others through the sliding window (the configs'
/// `sliding_window_pattern`): block i is global when (i + 1) % N == 0. layer_pattern<6> for
/// Gemma 3, gemma3_config's default.
template <std::size_t N> struct layer_pattern : detail::size_tag<detail::layer_pattern_tag, N> {};
/// The rotary base of the local (sliding-window) layers (the configs' `rope_local_base_freq`;
/// 10000 for Gemma 3); rope_theta<> is then the global layers' base.
template <std::size_t N> struct rope_local_base_freq : detail::size_tag<detail::rope_local_base_tag, N> {};
/// The configs' `query_pre_attn_scalar`: attention scores are scaled by its inverse square root.
/// weft scales by 1/sqrt(head_dim), so gemma3_config accepts only the head size (every Gemma 3).
template <std::size_t N> struct query_pre_attn_scalar : detail::size_tag<detail::query_pre_attn_scalar_tag, N> {};

}  // namespace weft

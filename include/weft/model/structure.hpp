#pragma once
// ---- the structure of a model, as text and as a hash: what a checkpoint must match ----
// structure_of<L>() describes a layer type in a canonical text: compositions by their children,
// leaves by their kind, widths and parameters (names, shapes, tensor-parallel roles, packed
// segments, export layouts). Two builds with the same text compute the same function on the
// same parameters; a squared-ReLU MLP and a GELU one have the same parameters but different
// texts. structure_hash<L>() is its 64-bit FNV-1a hash, 16 hex digits; checkpoints carry both
// (train/checkpoint.hpp) and refuse a file saved from another structure.
//
//   named<"mlp", L>          mlp=<L>                sequential<A, B>      seq(<A>,<B>)
//   residual<L>              res(<L>)               repeat<N, L>          rep N(<L>)
//   branch_sum<A, B>         sum(<A>,<B>)           gpt<…>, llama<…>      their sequential's text
//   a leaf                   kind[in->out]{name:shape:role, …}
//
// A leaf's kind: weft's own layers are named here (causal_attention with its heads, kv heads,
// head size and position encoding). A layer of your own gives its kind with
//   static constexpr std::string_view structure_name = "squared_relu";
// (include any option that changes what it computes); without one, the compiler's spelling of
// its type is used, which is stable for one compiler but may differ between compilers.
#include "weft/model/bias_free_layernorm.hpp"   // bias_free_layernorm
#include "weft/model/causal_attention.hpp"      // causal_attention
#include "weft/model/gelu.hpp"                  // gelu
#include "weft/model/layer.hpp"                 // layer, param_info, role_name
#include "weft/model/layernorm.hpp"             // layernorm
#include "weft/model/linear.hpp"                // linear
#include "weft/model/lm_head.hpp"               // lm_head
#include "weft/model/local_global_attention.hpp"  // local_global_attention
#include "weft/model/parallel_branches.hpp"     // branch_sum
#include "weft/model/positional_embedding.hpp"  // positional_embedding
#include "weft/model/qk_norm.hpp"               // qk_norm
#include "weft/model/repeat.hpp"                // repeat
#include "weft/model/residual.hpp"              // residual
#include "weft/model/rmsnorm.hpp"               // rmsnorm
#include "weft/model/sequential.hpp"            // sequential
#include "weft/model/embedding_scale.hpp"       // embedding_scale
#include "weft/model/swiglu.hpp"                // gated_unit: swiglu, geglu
#include "weft/model/token_embedding.hpp"       // token_embedding

#include <charconv>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>

namespace weft {

namespace detail {
// Appends the pieces in order (no `"literal" + std::string` temporaries: g++ 12 warns on those).
template <class... Parts>
std::string cat(const Parts&... parts) {
  std::string s;
  ((s += parts), ...);
  return s;
}

// A norm's epsilon as the shortest text that reads back to the same double ("1e-06").
inline std::string format_eps(double eps) {
  char buf[32];
  const auto r = std::to_chars(buf, buf + sizeof buf, eps);
  return std::string(buf, r.ptr);
}
// "(eps=…)" after a norm's kind when its epsilon is not the default (the default keeps the
// historical text, so earlier checkpoints' structures still match).
template <double Eps, double Default>
std::string eps_text() {
  if constexpr (Eps == Default) return {};
  else return cat("(eps=", format_eps(Eps), ")");
}

// ---- how each kind of layer is recognised ----
template <class L>
struct structure_composition {
  static constexpr bool is = false;
};
// The kind of a leaf layer (empty: not one of weft's).
template <class L>
struct structure_leaf_kind {
  static std::string text() { return {}; }
};
}  // namespace detail

/// The canonical text of layer type `L` (see the top of the file).
template <class L>
std::string structure_of();

namespace detail {
template <std::size_t In, std::size_t Out, role R, bool Bias, class Init, export_layout E, class P>
struct structure_leaf_kind<linear<In, Out, R, Bias, Init, E, P>> {
  static std::string text() { return "linear"; }
};
template <std::size_t C, double Eps>
struct structure_leaf_kind<layernorm<C, Eps>> {
  static std::string text() { return cat("layernorm", eps_text<Eps, ops::layernorm_eps>()); }
};
template <std::size_t C, double Eps>
struct structure_leaf_kind<bias_free_layernorm<C, Eps>> {
  static std::string text() { return cat("bias_free_layernorm", eps_text<Eps, ops::layernorm_eps>()); }
};
template <std::size_t C, double Eps, bool U>
struct structure_leaf_kind<rmsnorm<C, Eps, U>> {  // U: Gemma's x̂·(1 + w), "rmsnorm_unit_offset"
  static std::string text() { return cat(U ? "rmsnorm_unit_offset" : "rmsnorm", eps_text<Eps, ops::rmsnorm_eps>()); }
};
template <std::size_t C, gelu_form Form>
struct structure_leaf_kind<gelu<C, Form>> {
  static std::string text() { return Form == gelu_form::erf ? "gelu_erf" : "gelu_tanh"; }
};
template <std::size_t H, gate_kind Kind>
struct structure_leaf_kind<gated_unit<H, Kind>> {
  static std::string text() { return Kind == gate_kind::silu ? "swiglu" : "geglu_tanh"; }
};
template <std::size_t C>
struct structure_leaf_kind<embedding_scale<C>> {
  static std::string text() { return "embedding_scale"; }
};

template <std::size_t H, std::size_t KVH, std::size_t D, class Pos, std::size_t W>
struct structure_leaf_kind<causal_attention<H, KVH, D, Pos, W>> {
  static std::string text() {
    return cat("causal_attention(heads=", std::to_string(H), ",kv_heads=", std::to_string(KVH), ",head_size=",
               std::to_string(D), W ? cat(",window=", std::to_string(W)) : std::string(), position_text());
  }
  // The default rope keeps its historical text, so earlier checkpoints' structures still match.
  static std::string position_text() {
    if constexpr (!Pos::enabled) return ",no_rope)";
    else if constexpr (Pos::base == 10000 && Pos::template dims<D> == D && !Pos::scaling::enabled) return ",rope)";
    else return cat(",rope(base=", std::to_string(Pos::base), ",dims=", std::to_string(Pos::template dims<D>),
                    scaling_text(), "))");
  }
  static std::string scaling_text() {
    using Sc = typename Pos::scaling;
    if constexpr (!Sc::enabled) return "";
    else if constexpr (requires { Sc::original_context; })
      return cat(",llama3_scaling=", std::to_string(Sc::factor), "/", std::to_string(Sc::low_freq_factor), "/",
                 std::to_string(Sc::high_freq_factor), "/", std::to_string(Sc::original_context));
    else if constexpr (requires { Sc::linear_factor; })
      return cat(",linear_scaling=", std::to_string(Sc::linear_factor));
    else return ",scaled";
  }
};
template <std::size_t H, std::size_t KVH, std::size_t D, double Eps, bool U>
struct structure_leaf_kind<qk_norm<H, KVH, D, Eps, U>> {
  static std::string text() {
    return cat("qk_norm(heads=", std::to_string(H), ",kv_heads=", std::to_string(KVH),
               Eps == ops::rmsnorm_eps ? std::string() : cat(",eps=", format_eps(Eps)), U ? ",unit_offset" : "", ")");
  }
};
// Gemma 3's attention core: the pattern and both forms' texts.
template <std::size_t P, class Local, class Global>
struct structure_leaf_kind<local_global_attention<P, Local, Global>> {
  static std::string text() {
    return cat("local_global(pattern=", std::to_string(P), ",local=", structure_leaf_kind<Local>::text(),
               ",global=", structure_leaf_kind<Global>::text(), ")");
  }
};
template <std::size_t V, std::size_t C>
struct structure_leaf_kind<token_embedding<V, C>> {
  static std::string text() { return "token_embedding"; }
};
template <std::size_t Ctx, std::size_t C>
struct structure_leaf_kind<positional_embedding<Ctx, C>> {
  static std::string text() { return "positional_embedding"; }
};
template <std::size_t V, std::size_t C, class Tie>
struct structure_leaf_kind<lm_head<V, C, Tie>> {
  static std::string text() {
    if constexpr (Tie::is_tied) return cat("lm_head(tied=", Tie::path.view(), ")");
    else return "lm_head";
  }
};

// The compiler's spelling of a type, from the function signature (a user layer without a
// structure_name).
template <class T>
constexpr std::string_view spelled_type() {
#if defined(__clang__) || defined(__GNUC__)
  constexpr std::string_view f = __PRETTY_FUNCTION__;
  constexpr std::string_view key = "T = ";
  constexpr std::size_t at = f.find(key);
  if constexpr (at == std::string_view::npos) return f;
  else {
    constexpr std::string_view rest = f.substr(at + key.size());
    return rest.substr(0, rest.find_first_of(";]"));
  }
#else
  return __FUNCSIG__;
#endif
}

template <class... Ls>
struct structure_composition<sequential<Ls...>> {
  static constexpr bool is = true;
  static std::string text() {
    std::string s;
    ((s += s.empty() ? "" : ",", s += structure_of<Ls>()), ...);
    return cat("seq(", s, ")");
  }
};
template <class I>
struct structure_composition<residual<I>> {
  static constexpr bool is = true;
  static std::string text() { return cat("res(", structure_of<I>(), ")"); }
};
template <std::size_t N, class B, std::size_t First>
struct structure_composition<repeat<N, B, First>> {
  static constexpr bool is = true;
  static std::string text() { return cat("rep ", std::to_string(N), "(", structure_of<B>(), ")"); }
};
template <class... Fs>
struct structure_composition<branch_sum<Fs...>> {
  static constexpr bool is = true;
  static std::string text() {
    std::string s;
    ((s += s.empty() ? "" : ",", s += structure_of<Fs>()), ...);
    return cat("sum(", s, ")");
  }
};

// gpt<Cfg>, llama<Cfg>, a user's model struct: the sequential it derives from.
template <class... Ls>
sequential<Ls...> structure_sequential_base(const sequential<Ls...>*);
template <class L>
concept structure_derived_from_sequential =
    !structure_composition<L>::is && requires(const L* p) { detail::structure_sequential_base(p); };

template <class L>
std::string leaf_structure() {
  std::string kind = structure_leaf_kind<L>::text();
  if (kind.empty()) {
    if constexpr (requires { std::string_view(L::structure_name); }) kind = std::string(std::string_view(L::structure_name));
    else kind = std::string(spelled_type<L>());
  }
  std::string s = cat(kind, "[", std::to_string(L::in_width), "->", std::to_string(L::out_width), "]{");
  bool first = true;
  L::visit_params("", 0, init_context{}, [&](const param_info& p) {
    s += first ? "" : ",";
    first = false;
    s += p.name;
    s += ':';
    for (std::size_t i = 0; i < p.shape.size(); ++i) {
      if (i) s += 'x';
      s += std::to_string(p.shape[i]);
    }
    s += ':';
    s += role_name(p.tp_role);
    if (p.export_as == export_layout::transposed) s += ":T";
    if (p.segments.size() > 1) {
      s += ":packed";
      for (std::size_t w : p.segments) {
        s += '/';
        s += std::to_string(w);
      }
    }
  });
  return s += '}';
}
}  // namespace detail

template <class L>
std::string structure_of() {
  if constexpr (requires { typename L::weft_named_tag; }) {
    return detail::cat(L::name.view(), "=", structure_of<typename L::inner>());
  } else if constexpr (detail::structure_composition<L>::is) {
    return detail::structure_composition<L>::text();
  } else if constexpr (requires { typename L::base_model; typename L::body; }) {
    return structure_of<typename L::base_model>();  // a recomputed model: the model's structure
  } else if constexpr (detail::structure_derived_from_sequential<L>) {
    return structure_of<decltype(detail::structure_sequential_base(static_cast<const L*>(nullptr)))>();
  } else {
    return detail::leaf_structure<L>();
  }
}

/// 64-bit FNV-1a of a text, as 16 lower-case hex digits.
inline std::string structure_digest(std::string_view text) {
  std::uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : text) h = (h ^ c) * 0x100000001b3ull;
  static constexpr char hex[] = "0123456789abcdef";
  std::string s(16, '0');
  for (int i = 15; i >= 0; --i, h >>= 4) s[static_cast<std::size_t>(i)] = hex[h & 0xf];
  return s;
}

/// The hash of structure_of<L>() (what checkpoints compare).
template <class L>
std::string structure_hash() {
  return structure_digest(structure_of<L>());
}

}  // namespace weft

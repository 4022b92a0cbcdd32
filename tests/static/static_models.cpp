// Compile-only: gpt and llama are layers and language models, their widths chain, and their
// parameter, kept and workspace counts equal hand-derived expressions.
#include <weft/model.hpp>
#include <weft/parallel/plan.hpp>

#include <cstddef>
#include <string_view>
#include <type_traits>

namespace {

using namespace weft;

// ---- tiny configurations ----
constexpr std::size_t V = 13, T = 8, C = 8, H = 2, KVH = 1, L = 2, D = C / H;
using tiny_gpt = gpt<gpt_config<vocab<V>, context<T>, width<C>, heads<H>, depth<L>>>;
using tiny_llama = llama<llama_config<vocab<V>, context<T>, width<C>, heads<H>, kv_heads<KVH>, depth<L>>>;
using ffn_llama = llama<llama_config<vocab<V>, context<T>, width<C>, heads<H>, depth<L>, ffn<20>>>;

// ---- concepts ----
static_assert(layer<tiny_gpt> && language_model<tiny_gpt>);
static_assert(layer<tiny_llama> && language_model<tiny_llama>);
static_assert(layer<ffn_llama> && language_model<ffn_llama>);
// Every building block is a layer; a plain struct is not.
static_assert(layer<layernorm<C>> && layer<rmsnorm<C>> && layer<linear<C, C>> && layer<gelu<C>> && layer<swiglu<C>>);
static_assert(layer<token_embedding<V, C>> && layer<positional_embedding<T, C>> && layer<lm_head<V, C>>);
static_assert(layer<causal_attention<H, KVH, D, rope>> && layer<attention<C, H>> && layer<gelu_mlp<C, 4 * C>>);
static_assert(layer<swiglu_mlp<C, 16>> && layer<named<"x", linear<C, C>>> && layer<residual<linear<C, C>>>);
static_assert(layer<repeat<3, linear<C, C>>> && layer<sequential<linear<C, 4>, gelu<4>>>);
struct not_a_layer {};
static_assert(!layer<not_a_layer>);
// A single layer is not a language model (no vocabulary, depth, ...).
static_assert(!language_model<linear<C, C>>);
static_assert(!language_model<sequential<named<"wte", token_embedding<V, C>>, lm_head<V, C>>>);

// ---- model facts ----
static_assert(tiny_gpt::vocab_size == V && tiny_gpt::context_length == T && tiny_gpt::width == C);
static_assert(tiny_gpt::heads == H && tiny_gpt::kv_heads == H && tiny_gpt::depth == L && tiny_gpt::ffn == 4 * C);
static_assert(tiny_llama::kv_heads == KVH && tiny_llama::ffn == 64);  // 8/3·8 = 21.3, rounded up to 64
static_assert(ffn_llama::kv_heads == H && ffn_llama::ffn == 20);      // defaults: kv_heads = heads

// ---- widths chain: ids -> (width) ... -> (vocab) ----
static_assert(tiny_gpt::in_width == 0 && tiny_gpt::out_width == V);
static_assert(tiny_llama::in_width == 0 && tiny_llama::out_width == V);
using gpt_children = detail::gpt_body<tiny_gpt::config>;
static_assert(gpt_children::n == 5);
static_assert(gpt_children::out_widths[0] == C && gpt_children::in_widths[1] == C);  // wte -> wpe
static_assert(gpt_children::out_widths[1] == C && gpt_children::in_widths[2] == C);  // wpe -> h
static_assert(gpt_children::out_widths[2] == C && gpt_children::in_widths[3] == C);  // h -> ln_f
static_assert(gpt_children::out_widths[3] == C && gpt_children::in_widths[4] == C);  // ln_f -> head
using gpt_attn = attention<C, H>;
static_assert(gpt_attn::in_widths[1] == 3 * C && gpt_attn::out_widths[1] == C);  // packed q,k,v -> heads
using llama_attn = attention<C, H, KVH, rope, false>;
static_assert(llama_attn::in_widths[1] == (H + 2 * KVH) * D && llama_attn::out_widths[1] == H * D);
static_assert(swiglu_mlp<C, 64>::in_widths[1] == 2 * 64 && swiglu_mlp<C, 64>::out_widths[1] == 64);

// ---- parameter counts, by hand ----
constexpr std::size_t gpt_block_params = (2 * C)                      // ln_1
                                         + (C * 3 * C + 3 * C)        // attn.c_attn
                                         + (C * C + C)                // attn.c_proj
                                         + (2 * C)                    // ln_2
                                         + (C * 4 * C + 4 * C)        // mlp.c_fc
                                         + (4 * C * C + C);           // mlp.c_proj
static_assert(gpt_block_params == 12 * C * C + 13 * C);
static_assert(tiny_gpt::param_count == V * C + T * C + L * gpt_block_params + 2 * C);  // head tied: no extra
static_assert(tiny_gpt::lookup_param_count == T * C);

constexpr std::size_t llama_block_params(std::size_t F, std::size_t kvh) {
  return C                          // ln_1 (rmsnorm: gain only)
         + C * (H + 2 * kvh) * D    // attn.c_attn, no bias
         + H * D * C                // attn.c_proj
         + C                        // ln_2
         + C * 2 * F                // mlp.gate_up
         + F * C;                   // mlp.down
}
static_assert(tiny_llama::param_count == V * C + L * llama_block_params(64, KVH) + C + V * C);  // untied head
static_assert(ffn_llama::param_count == V * C + L * llama_block_params(20, H) + C + V * C);
static_assert(tiny_llama::lookup_param_count == V * C);

// ---- leaf and composition counts ----
static_assert(linear<C, 6>::param_count == 6 * C + 6 && linear<C, 6, role::row, false>::param_count == 6 * C);
static_assert(lm_head<V, C>::param_count == V * C && lm_head<V, C, tied<"wte.weight">>::param_count == 0);
static_assert(repeat<3, linear<C, C>>::param_count == 3 * (C * C + C));
// A norm's statistics: norm_stat_slots<n> = 2n + 1 elements (two 16-bit slots per f32 statistic,
// one for alignment; model/norm_stats.hpp), rounded up to 64 so that later activations stay
// aligned, for mean and rstd (layernorm) or rstd (rmsnorm) per row.
static_assert(norm_stat_slots<12> == 64 && norm_stat_slots<32> == 128 && norm_stat_slots<1024> == 2048 + 64);
static_assert(layernorm<C>::kept_count<2, 3> == norm_stat_slots<12> && rmsnorm<C>::kept_count<2, 3> == norm_stat_slots<6>);
static_assert(causal_attention<H, KVH, D, no_rope>::kept_count<2, 3> == 2 * H * 3 * 3);
static_assert(causal_attention<H, KVH, D, rope>::kept_count<2, 3> == 2 * H * 3 * 3 + 6 * (H + 2 * KVH) * D);
// sequential keeps its children's activations and the inputs of children 1..n-1.
static_assert(sequential<linear<C, 12>, gelu<12>, linear<12, 4>>::kept_count<2, 3> == 6 * 12 + 6 * 12);
// repeat keeps N copies' activations and the inputs of copies 1..N-1.
static_assert(repeat<3, layernorm<C>>::kept_count<2, 3> == 3 * norm_stat_slots<12> + 2 * 6 * C);

// ---- the ready models of docs/models.md ----
namespace ready {
// example-begin ready-models
using gpt2_124m = gpt<gpt_config<vocab<50257>, context<1024>, width<768>, heads<12>, depth<12>>>;
using tiny_llama = llama<llama_config<vocab<32000>, context<2048>, width<2048>, heads<32>, kv_heads<4>, depth<22>>>;
using llama3_8b = llama<llama_config<vocab<128256>, context<8192>, width<4096>, heads<32>, kv_heads<8>, depth<32>,
                                     ffn<14336>, rope_theta<500000>>>;
using llama31_8b = llama<llama_config<vocab<128256>, context<131072>, width<4096>, heads<32>, kv_heads<8>, depth<32>,
                                      ffn<14336>, rope_theta<500000>, rope_scaling<llama3_rope_scaling<8>>>>;
using llama32_1b = llama<llama_config<vocab<128256>, context<131072>, width<2048>, heads<32>, kv_heads<8>, depth<16>,
                                      ffn<8192>, rope_theta<500000>, rope_scaling<llama3_rope_scaling<32>>,
                                      tie_word_embeddings<>>>;
using mistral_7b = llama<llama_config<vocab<32000>, context<8192>, width<4096>, heads<32>, kv_heads<8>, depth<32>,
                                      ffn<14336>, sliding_window<4096>>>;
using qwen25_05b = llama<llama_config<vocab<151936>, context<32768>, width<896>, heads<14>, kv_heads<2>, depth<24>,
                                      ffn<4864>, rope_theta<1000000>, qkv_bias<>, tie_word_embeddings<>, norm_eps<1e-6>>>;
using qwen3_06b = llama<llama_config<vocab<151936>, context<40960>, width<1024>, heads<16>, kv_heads<8>, head_dim<128>,
                                     depth<28>, ffn<3072>, rope_theta<1000000>, query_key_norm<>, tie_word_embeddings<>,
                                     norm_eps<1e-6>>>;
using pythia_70m = gpt_neox<neox_config<vocab<50304>, context<2048>, width<512>, heads<8>, depth<6>>>;
using pythia_160m = gpt_neox<neox_config<vocab<50304>, context<2048>, width<768>, heads<12>, depth<12>>>;
using pythia_1b = gpt_neox<neox_config<vocab<50304>, context<2048>, width<2048>, heads<8>, depth<16>>>;
using gemma3_1b = gemma3<gemma3_config<vocab<262144>, context<32768>, width<1152>, heads<4>, kv_heads<1>, depth<26>,
                                       ffn<6912>>>;  // head_dim 256, window 512, pattern 6, bases 1e6 / 1e4, eps 1e-6
using gemma3_270m = gemma3<gemma3_config<vocab<262144>, context<32768>, width<640>, heads<4>, kv_heads<1>, depth<18>,
                                         ffn<2048>>>;
using gemma3_4b = gemma3<gemma3_config<vocab<262208>, context<131072>, width<2560>, heads<8>, kv_heads<4>, depth<34>,
                                       ffn<10240>, rope_scaling<linear_rope_scaling<8>>>>;  // its language model
// example-end ready-models
static_assert(llama3_8b::param_count == 8030261248);  // Meta-Llama-3-8B as Hugging Face counts it
static_assert(llama3_8b::config::rope_theta == 500000 && tiny_llama::config::rope_theta == 10000);
static_assert(std::is_same_v<typename llama3_8b::config::block_position, rotary<500000>>);
static_assert(std::is_same_v<typename llama31_8b::config::block_position, rotary<500000, 0, llama3_rope_scaling<8>>>);
static_assert(llama31_8b::param_count == llama3_8b::param_count);  // the scaling and context add no parameter
static_assert(llama32_1b::param_count == 1235814400);
static_assert(mistral_7b::param_count == 7241732096);  // Mistral-7B-v0.1 as Hugging Face counts it
static_assert(qwen25_05b::param_count == 494032768);   // Qwen2.5-0.5B as Hugging Face counts it
// Qwen3-0.6B: 16 heads of 128 on a width of 1024; 0.44B without the embedding, as its model card says
static_assert(qwen3_06b::param_count == 596049920 && qwen3_06b::param_count - 151936 * 1024 == 440467456);
static_assert(qwen3_06b::head_dim == 128 && qwen25_05b::head_dim == 64);
// Qwen's rms_norm_eps reaches every RMSNorm, the q/k norms included; LLaMA keeps 1e-5
static_assert(qwen3_06b::config::norm_epsilon == 1e-6 && llama3_8b::config::norm_epsilon == 1e-5);
static_assert(std::is_same_v<detail::llama_body<qwen3_06b::config>,
                             sequential<named<"embed", token_embedding<151936, 1024>>,
                                        named<"layers", repeat<28, detail::llama_block<qwen3_06b::config>>>,
                                        named<"norm", rmsnorm<1024, 1e-6>>,
                                        named<"head", lm_head<151936, 1024, tied<"embed.weight">>>>>);
// the plan's attention FLOPs count heads · head_dim (24 here), not the width (16)
using wide_heads = llama<llama_config<vocab<32>, context<8>, width<16>, heads<4>, kv_heads<2>, head_dim<6>, depth<2>,
                                      tie_word_embeddings<>>>;
static_assert(plan<wide_heads, batch<micro<1>, seq<8>>>::flops_per_token ==
              6 * wide_heads::param_count + 12 * 2 * 4 * 6 * 8);
// and the keys a query sees: a window of 4 in sequences of 16 counts 4, not 16
using windowed = llama<llama_config<vocab<32>, context<16>, width<16>, heads<4>, depth<2>, sliding_window<4>,
                                    tie_word_embeddings<>>>;
static_assert(plan<windowed, batch<micro<1>, seq<16>>>::flops_per_token == 6 * windowed::param_count + 12 * 2 * 16 * 4);
static_assert(plan<windowed, batch<micro<1>, seq<2>>>::flops_per_token == 6 * windowed::param_count + 12 * 2 * 16 * 2);
static_assert(mistral_7b::config::sliding_window == 4096 && llama3_8b::config::sliding_window == 0);  // Llama-3.2-1B as Hugging Face counts it (tied head)
static_assert(llama32_1b::lookup_param_count == 0 && llama3_8b::lookup_param_count == 128256 * 4096);
static_assert(language_model<gpt2_124m> && gpt2_124m::param_count == 124439808);  // Hugging Face's gpt2
static_assert(language_model<tiny_llama> && tiny_llama::ffn == 5504);  // 8/3 * 2048, rounded up to 64
static_assert(tiny_llama::param_count == 2 * 32000 * 2048 + 2048 +
                                         22 * (2 * 2048 + 2048 * 40 * 64 + 2048 * 2048 + 3 * 2048 * 5504));
// Pythia (EleutherAI/pythia-*): untied embed_in and embed_out, 12·C² + 13·C per parallel block
// (two LayerNorms with biases, qkv and dense with biases, a 4·C MLP with biases), a final LayerNorm
static_assert(language_model<pythia_70m> && pythia_70m::param_count == 70426624);
static_assert(pythia_160m::param_count == 162322944);
static_assert(pythia_1b::param_count == 1011781632);
static_assert(pythia_1b::param_count == 2 * 50304 * 2048 + 16 * (12 * 2048 * 2048 + 13 * 2048) + 2 * 2048);
static_assert(pythia_70m::ffn == 2048 && pythia_70m::head_dim == 64 && pythia_1b::head_dim == 256);
// rotary_pct 0.25: a quarter of each head rotates, base 10000
static_assert(pythia_70m::config::rotary_dims == 16 && pythia_1b::config::rotary_dims == 64);
static_assert(std::is_same_v<typename pythia_1b::config::block_position, rotary<10000, 64>>);
static_assert(pythia_70m::lookup_param_count == 50304 * 512 && pythia_70m::kv_heads == 8);
static_assert(std::string_view(pythia_70m::family) == "gpt_neox");
// The parameter names of transformers' GPT-NeoX map onto these (io/hf_neox.hpp)
static_assert(pythia_70m::find_param("embed.weight") == 0);
static_assert(pythia_70m::find_param("layers.0.ln_1.weight") == 50304 * 512);
static_assert(pythia_70m::find_param("layers.0.ln_1.bias") == 50304 * 512 + 512);
static_assert(pythia_70m::find_param("layers.0.attn.c_attn.weight") == 50304 * 512 + 2 * 512);
static_assert(pythia_70m::find_param("layers.0.ln_2.weight") != npos_param &&
              pythia_70m::find_param("layers.5.mlp.c_proj.bias") != npos_param &&
              pythia_70m::find_param("norm.bias") != npos_param && pythia_70m::find_param("head.weight") != npos_param);
// Gemma 3 (google/gemma-3-*): per block q/o 2·C·H·D, k/v 2·C·KVH·D, the q/k norms 2·D, GeGLU
// 3·C·F and four (1 + w) RMSNorms 4·C; the table V·C once (the head is tied) and a final norm C
static_assert(language_model<gemma3_1b> && gemma3_1b::param_count == 999885952);
static_assert(gemma3_1b::param_count ==
              262144 * 1152 + 1152 + 26 * (2 * 1152 * 4 * 256 + 2 * 1152 * 256 + 2 * 256 + 3 * 1152 * 6912 + 4 * 1152));
static_assert(gemma3_270m::param_count == 268098176);
static_assert(gemma3_270m::param_count ==
              262144 * 640 + 640 + 18 * (2 * 640 * 4 * 256 + 2 * 640 * 256 + 2 * 256 + 3 * 640 * 2048 + 4 * 640));
static_assert(gemma3_4b::param_count ==
              262208 * 2560 + 2560 + std::size_t{34} * (2 * 2560 * 8 * 256 + 2 * 2560 * 4 * 256 + 2 * 256 + 3 * 2560 * 10240 + 4 * 2560));
static_assert(gemma3_1b::head_dim == 256 && gemma3_1b::lookup_param_count == 0 && gemma3_1b::kv_heads == 1);
static_assert(gemma3_1b::config::sliding_window == 512 && gemma3_1b::config::pattern == 6 &&
              gemma3_1b::config::global_layers == 4 && gemma3_1b::config::norm_epsilon == 1e-6);
static_assert(std::is_same_v<typename gemma3_1b::config::local_position, rotary<10000>> &&
              std::is_same_v<typename gemma3_1b::config::global_position, rotary<1000000>> &&
              std::is_same_v<typename gemma3_4b::config::global_position, rotary<1000000, 0, linear_rope_scaling<8>>>);
static_assert(std::string_view(gemma3_1b::family) == "gemma3");
// transformers' names, one to one (docs/models.md): model.embed_tokens, layers.{i}.input_layernorm, …
static_assert(gemma3_1b::find_param("embed.weight") == 0);
static_assert(gemma3_1b::find_param("layers.0.input_layernorm.weight") == 262144 * 1152);
static_assert(gemma3_1b::find_param("layers.0.self_attn.c_attn.weight") == 262144 * 1152 + 1152);
static_assert(gemma3_1b::find_param("layers.25.self_attn.qk_norm.q_weight") != npos_param &&
              gemma3_1b::find_param("layers.25.post_attention_layernorm.weight") != npos_param &&
              gemma3_1b::find_param("layers.25.pre_feedforward_layernorm.weight") != npos_param &&
              gemma3_1b::find_param("layers.25.mlp.gate_up.weight") != npos_param &&
              gemma3_1b::find_param("layers.25.post_feedforward_layernorm.weight") != npos_param &&
              gemma3_1b::find_param("norm.weight") + 1152 == gemma3_1b::param_count);
// the plan's attention FLOPs: 22 local layers see 512 keys, 4 global ones the whole 4096
static_assert(plan<gemma3_1b, batch<micro<1>, seq<4096>>>::flops_per_token ==
              6 * gemma3_1b::param_count + 12 * 4 * 256 * (22 * 512 + 4 * 4096));
}  // namespace ready

// ---- the plan over them ----
using gpt_plan = plan<tiny_gpt, batch<micro<2>, seq<T>>, precision<double>>;
static_assert(gpt_plan::param_count == tiny_gpt::param_count && gpt_plan::rows == 2 * T);
static_assert(gpt_plan::vocab_size == V && gpt_plan::logits_count == 2 * T * V);
static_assert(gpt_plan::offsets[gpt_plan::params] == 0 && gpt_plan::offsets[gpt_plan::grads] % 64 == 0);
static_assert(gpt_plan::param_offset_bytes("wpe.weight") == V * C * sizeof(double));
static_assert(gpt_plan::param_offset_bytes("no.such.param") == npos_param);
using budget_plan = plan<tiny_llama, batch<micro<1>, seq<T>>, memory_budget<1_MiB>>;  // fits easily
static_assert(budget_plan::bytes_per_rank <= 1_MiB && budget_plan::budget == 1_MiB);

}  // namespace

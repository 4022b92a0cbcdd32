// A checkpoint's identity is the model's structure (model/structure.hpp): a build whose MLP
// activation differs has the same tensors but is refused, in one line naming both structures;
// recomputation does not change the structure; a model may rename its tensors and write its own
// config.json for other frameworks; a language model without family, kv_heads or ffn saves and
// loads.
#include <weft/model.hpp>
#include <weft/model/structure.hpp>
#include <weft/parallel/plan.hpp>
#include <weft/io/checkpoint.hpp>
#include <weft/io/safetensors.hpp>
#include <weft/exec/training_step.hpp>

#include "../common/temp_dir.hpp"

#include <catch2/catch.hpp>

#include <cstddef>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

using namespace weft;

namespace {

/// relu(x)² (as examples/02_custom_layer), with a structure name.
template <std::size_t C>
struct squared_relu : stateless_layer {
  static constexpr std::string_view structure_name = "squared_relu";
  static constexpr std::size_t in_width = C, out_width = C;
  template <std::size_t B, std::size_t S>
  static constexpr std::size_t kept_count = 0;
  template <std::size_t B, std::size_t S>
  static constexpr std::size_t scratch_count = 0;
  template <class F>
  static void forward(const F&, const typename F::value_type* in, typename F::value_type* out) {
    for (std::size_t i = 0; i < F::rows * C; ++i) out[i] = in[i] > 0 ? in[i] * in[i] : 0;
  }
  template <class F>
  static void backward(const F&, const typename F::value_type* in, const typename F::value_type* dout,
                       typename F::value_type* din) {
    for (std::size_t i = 0; i < F::rows * C; ++i) din[i] += in[i] > 0 ? 2 * in[i] * dout[i] : 0;
  }
};

constexpr std::size_t V = 32, Ctx = 8, C = 16, H = 2, L = 1;

// The same GPT with a GELU or a squared-ReLU MLP: identical names and shapes.
template <class Act>
using mlp_with = sequential<named<"c_fc", linear<C, 4 * C, role::column>>, Act,
                            named<"c_proj", linear<4 * C, C, role::row, true, init::normal_residual<20>>>>;
template <class Act>
using body = sequential<named<"wte", token_embedding<V, C>>, named<"wpe", positional_embedding<Ctx, C>>,
                        named<"h", repeat<L, block<layernorm<C>, attention<C, H>, layernorm<C>, mlp_with<Act>>>>,
                        named<"ln_f", layernorm<C>>, lm_head<V, C, tied<"wte.weight">>>;

// A language model with only what the concept asks (no family, kv_heads, ffn).
template <class Act>
struct small_lm : body<Act> {
  static constexpr std::size_t vocab_size = V, context_length = Ctx, depth = L, width = C, heads = H;
  static constexpr std::size_t lookup_param_count = Ctx * C;
};
using gelu_lm = small_lm<gelu<4 * C>>;
using relu2_lm = small_lm<squared_relu<4 * C>>;

// The same model, naming its tensors "model.<name>" and writing its own config.json.
struct hooked_lm : gelu_lm {
  static std::string export_name(std::string_view weft_name) { return "model." + std::string(weft_name); }
  static void write_config(std::ostream& out) { out << "{\"model_type\": \"my-gpt\", \"n_embd\": " << C << "}\n"; }
};

using gelu_plan = plan<gelu_lm, batch<micro<1>, seq<Ctx>>>;
using relu2_plan = plan<relu2_lm, batch<micro<1>, seq<Ctx>>>;
using hooked_plan = plan<hooked_lm, batch<micro<1>, seq<Ctx>>>;

template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const checkpoint_error& e) {
    return e.what();
  }
  return {};
}

std::string read_text(const std::filesystem::path& p) {
  std::ifstream f(p);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

}  // namespace

TEST_CASE("structure text and hash tell builds apart that have the same tensors", "[train][checkpoint][structure]") {
  STATIC_REQUIRE(gelu_lm::param_count == relu2_lm::param_count);
  const std::string g = structure_of<gelu_lm>(), r = structure_of<relu2_lm>();
  INFO(g);
  CHECK(g != r);
  CHECK(g.find("gelu_tanh[64->64]") != std::string::npos);
  CHECK(r.find("squared_relu[64->64]") != std::string::npos);
  CHECK(structure_hash<gelu_lm>() != structure_hash<relu2_lm>());
  CHECK(structure_hash<gelu_lm>().size() == 16);
  CHECK(structure_hash<gelu_lm>() == structure_digest(g));  // deterministic
  // Sizes, heads, position encodings and tensor-parallel roles are part of it.
  CHECK(structure_of<attention<C, 2>>() != structure_of<attention<C, 4>>());
  CHECK(structure_of<attention<C, 4, 2, rope, false>>() != structure_of<attention<C, 4, 2, no_rope, false>>());
  // the rotary base and the rotated dimensions change what attention computes; the default keeps its old text
  CHECK(structure_of<attention<C, 4, 2, rotary<500000>, false>>() != structure_of<attention<C, 4, 2, rope, false>>());
  CHECK(structure_of<attention<C, 4, 2, rotary<10000, 2>, false>>() != structure_of<attention<C, 4, 2, rope, false>>());
  CHECK(structure_of<attention<C, 4, 2, rotary<10000, C / 4>, false>>() == structure_of<attention<C, 4, 2, rope, false>>());
  CHECK(structure_of<causal_attention<4, 2, 8, rope>>() == "causal_attention(heads=4,kv_heads=2,head_size=8,rope)[64->32]{}");
  CHECK(structure_of<causal_attention<4, 2, 8, rotary<500000, 4>>>() ==
        "causal_attention(heads=4,kv_heads=2,head_size=8,rope(base=500000,dims=4))[64->32]{}");
  CHECK(structure_of<causal_attention<4, 2, 8, rope, 4096>>() ==
        "causal_attention(heads=4,kv_heads=2,head_size=8,window=4096,rope)[64->32]{}");
  CHECK(structure_of<causal_attention<4, 2, 8, rotary<500000, 0, llama3_rope_scaling<8>>>>() ==
        "causal_attention(heads=4,kv_heads=2,head_size=8,rope(base=500000,dims=8,llama3_scaling=8/1/4/8192))[64->32]{}");
  CHECK(structure_of<linear<C, C, role::column>>() != structure_of<linear<C, C, role::row>>());
  CHECK(structure_of<layernorm<C>>() != structure_of<bias_free_layernorm<C>>());
  // the GELU's form is part of it (the exact erf form is another function than GPT-2's tanh one)
  CHECK(structure_of<gelu<C>>() == "gelu_tanh[16->16]{}");
  CHECK(structure_of<gelu<C, gelu_form::erf>>() == "gelu_erf[16->16]{}");
  // a norm's epsilon changes what it computes; the default keeps the old text
  CHECK(structure_of<rmsnorm<C>>() == "rmsnorm[16->16]{weight:16:replicated}");
  CHECK(structure_of<rmsnorm<C, 1e-6>>() == "rmsnorm(eps=1e-06)[16->16]{weight:16:replicated}");
  CHECK(structure_of<layernorm<C, 1e-6>>().starts_with("layernorm(eps=1e-06)["));
  CHECK(structure_of<bias_free_layernorm<C, 1e-6>>().starts_with("bias_free_layernorm(eps=1e-06)["));
  CHECK(structure_of<qk_norm<4, 2, 8>>().starts_with("qk_norm(heads=4,kv_heads=2)["));
  CHECK(structure_of<qk_norm<4, 2, 8, 1e-6>>().starts_with("qk_norm(heads=4,kv_heads=2,eps=1e-06)["));
  {
    using qwen_like = llama<llama_config<vocab<32>, context<8>, width<16>, heads<4>, depth<1>, query_key_norm<>, norm_eps<1e-6>>>;
    using llama_like = llama<llama_config<vocab<32>, context<8>, width<16>, heads<4>, depth<1>, query_key_norm<>>>;
    const std::string q = structure_of<qwen_like>(), l = structure_of<llama_like>();
    INFO(q);
    CHECK(q != l);
    CHECK(l.find("eps=") == std::string::npos);
    // every norm carries it: ln_1, ln_2, the q/k norms and the final norm
    std::size_t count = 0;
    for (std::size_t at = q.find("eps=1e-06"); at != std::string::npos; at = q.find("eps=1e-06", at + 1)) ++count;
    CHECK(count == 4);
  }
  // Recomputation changes what is kept, not what is computed.
  using sel = plan<gelu_lm, batch<micro<1>, seq<Ctx>>, strategy<mesh<axis<"dp">>, recompute<selective>>>;
  CHECK(detail::model_structure<sel>() == detail::model_structure<gelu_plan>());
}

TEST_CASE("a checkpoint of another structure with the same tensors is refused in one line",
          "[train][checkpoint][structure]") {
  weft_test::temp_dir tmp;
  training_step<relu2_plan> relu2(train_options{});
  save_checkpoint(relu2, tmp / "relu2");
  train_options o;
  o.seed = 5;
  training_step<gelu_plan> gelu_step(o);
  const std::vector<float> before(gelu_step.params().begin(), gelu_step.params().end());

  const std::string e = error_of([&] { load_weights(gelu_step, tmp / "relu2" / "model.safetensors"); });
  INFO(e);
  REQUIRE(!e.empty());
  CHECK(e.find('\n') == std::string::npos);
  CHECK(e.find(structure_hash<relu2_lm>()) != std::string::npos);  // the file's
  CHECK(e.find(structure_hash<gelu_lm>()) != std::string::npos);   // this program's
  CHECK(e.find("squared_relu") != std::string::npos);              // where they differ
  CHECK(std::vector<float>(gelu_step.params().begin(), gelu_step.params().end()) == before);
  const std::string c = error_of([&] { load_checkpoint(gelu_step, tmp / "relu2"); });
  CHECK(c.find(structure_hash<relu2_lm>()) != std::string::npos);

  // The same structure loads; so does a file without weft's metadata (another framework's).
  training_step<relu2_plan> again(o);
  CHECK(error_of([&] { load_checkpoint(again, tmp / "relu2"); }).empty());
  const auto f = safetensors_file::open(tmp / "relu2" / "model.safetensors");
  CHECK(f.metadata().at("weft_structure") == structure_hash<relu2_lm>());
  CHECK(f.metadata().at("weft_structure_text") == structure_of<relu2_lm>());
}

TEST_CASE("a model's hooks name its tensors and write its config", "[train][checkpoint][structure]") {
  weft_test::temp_dir tmp;
  training_step<hooked_plan> st(train_options{});
  save_checkpoint(st, tmp / "ckpt");
  const auto f = safetensors_file::open(tmp / "ckpt" / "model.safetensors");
  CHECK(f.contains("model.wte.weight"));
  CHECK(f.contains("model.h.0.mlp.c_fc.weight"));
  CHECK_FALSE(f.contains("wte.weight"));
  CHECK(read_text(tmp / "ckpt" / "config.json") == "{\"model_type\": \"my-gpt\", \"n_embd\": 16}\n");
  train_options o;
  o.seed = 9;
  training_step<hooked_plan> back(o);
  load_checkpoint(back, tmp / "ckpt");  // the names are mapped back on load
  CHECK(std::vector<float>(back.params().begin(), back.params().end()) ==
        std::vector<float>(st.params().begin(), st.params().end()));
  // Without the hook the default config names weft's description and structure.
  training_step<gelu_plan> plain(train_options{});
  save_checkpoint(plain, tmp / "plain");
  const std::string cfg = read_text(tmp / "plain" / "config.json");
  CHECK(cfg.find("\"weft_model\": \"weft vocab=32") != std::string::npos);
  CHECK(cfg.find(structure_hash<gelu_lm>()) != std::string::npos);
}

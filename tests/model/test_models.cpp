// Whole models: gpt and llama gradients against finite differences, parameter counts against the
// published closed form, Hugging Face GPT-2 parameter names, the plan's memory layout,
// initialisation, and a few deterministic training steps.
#include <weft/model.hpp>
#include <weft/parallel/plan.hpp>
#include <weft/exec/training_step.hpp>

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <random>
#include <sstream>
#include <string>
#include <vector>

namespace {

using namespace weft;

// ---- tiny models ----
using tiny_gpt = gpt<gpt_config<vocab<13>, context<8>, width<8>, heads<2>, depth<2>>>;
using tiny_llama = llama<llama_config<vocab<13>, context<8>, width<8>, heads<2>, kv_heads<1>, depth<2>>>;

template <class M>
using f64_plan = plan<M, batch<micro<2>, seq<4>>, precision<double>>;

// ---- gradient of the mean cross-entropy w.r.t. every parameter ----
// Two metrics, both must be <= 1e-6: norm-wise ||a - b|| / ||b||, and element-wise
// |a - b| / max(|a|, |b|, 1e-2 · max|b|). Central differences of a loss of ~2.5 with h = 1e-5 carry
// ~eps·2.5/1e-5 ≈ 5e-11 absolute round-off, and the largest gradient is ~0.1, so elements below 1%
// of the largest are measured against that floor (their own size would turn the noise into >1e-6).
template <class M>
void check_model_gradients(unsigned seed) {
  using P = f64_plan<M>;
  training_step<P> st;
  constexpr std::size_t V = M::vocab_size;

  // Parameters of order 1 (not the 0.02-scale initialisation) so that every gradient is well
  // above the finite-difference noise; tokens and targets random.
  std::mt19937_64 g(seed);
  std::uniform_real_distribution<double> u(-0.5, 0.5);
  for (auto& p : st.params()) p = u(g);
  std::uniform_int_distribution<int> tok(0, static_cast<int>(V) - 1);
  for (auto& t : st.tokens()) t = tok(g);
  for (auto& t : st.targets()) t = tok(g);

  std::fill(st.grads().begin(), st.grads().end(), 0.0);
  const double loss = st.accumulate(1.0 / static_cast<double>(P::rows));  // forward, CE, backward
  REQUIRE(std::isfinite(loss));
  CHECK(loss == Approx(st.loss()).epsilon(1e-14));  // forward-only loss agrees

  const std::vector<double> analytic(st.grads().begin(), st.grads().end());
  std::vector<double> numeric(P::param_count);
  const double h = 1e-5;
  auto params = st.params();
  for (std::size_t i = 0; i < P::param_count; ++i) {
    const double p0 = params[i];
    params[i] = p0 + h;
    const double up = st.loss();
    params[i] = p0 - h;
    const double down = st.loss();
    params[i] = p0;
    numeric[i] = (up - down) / (2 * h);
  }

  double diff2 = 0, ref2 = 0, ref_max = 0;
  for (std::size_t i = 0; i < numeric.size(); ++i) {
    diff2 += (analytic[i] - numeric[i]) * (analytic[i] - numeric[i]);
    ref2 += numeric[i] * numeric[i];
    ref_max = std::max(ref_max, std::abs(numeric[i]));
  }
  const double floor = 1e-2 * ref_max;
  double worst = 0;
  std::size_t worst_i = 0;
  for (std::size_t i = 0; i < numeric.size(); ++i) {
    const double e = std::abs(analytic[i] - numeric[i]) / std::max({std::abs(analytic[i]), std::abs(numeric[i]), floor});
    if (e > worst) worst = e, worst_i = i;
  }
  // Name the parameter holding the worst element, for the failure message.
  std::string where;
  for (const auto& p : st.parameter_infos())
    if (worst_i >= p.offset && worst_i < p.offset + p.size) where = p.name + "[" + std::to_string(worst_i - p.offset) + "]";
  INFO("loss " << loss << ", norm-wise error " << std::sqrt(diff2 / ref2) << ", worst element " << where << " error "
               << worst << " (analytic " << analytic[worst_i] << ", numeric " << numeric[worst_i] << ")");
  CHECK(ref_max > 1e-4);
  CHECK(std::sqrt(diff2 / ref2) <= 1e-6);
  CHECK(worst <= 1e-6);
}

}  // namespace

TEST_CASE("gpt: gradient of the mean cross-entropy matches finite differences", "[model][gpt][gradients]") {
  // wte + wpe + 2 blocks of (12·C² + 13·C) + ln_f, C = 8
  STATIC_REQUIRE(f64_plan<tiny_gpt>::param_count == 13 * 8 + 8 * 8 + 2 * (12 * 8 * 8 + 13 * 8) + 2 * 8);
  check_model_gradients<tiny_gpt>(7);
}

TEST_CASE("llama: gradient of the mean cross-entropy matches finite differences", "[model][llama][gradients]") {
  check_model_gradients<tiny_llama>(8);
}

// ---- parameter counts ----

namespace {
// Narayanan et al. (Megatron-LM, 2021): P = 12·L·h²·(1 + 13/(12h) + (V + s)/(12·L·h)), which counts
// the blocks and both embeddings but not the final layernorm (2h), added here.
template <std::size_t V, std::size_t S, std::size_t H, std::size_t L>
long double gpt_closed_form() {
  const long double v = V, s = S, h = H, l = L;
  return 12.0L * l * h * h * (1.0L + 13.0L / (12.0L * h) + (v + s) / (12.0L * l * h)) + 2.0L * h;
}
template <std::size_t V, std::size_t S, std::size_t H, std::size_t Heads, std::size_t L>
void check_gpt_count() {
  using M = gpt<gpt_config<vocab<V>, context<S>, width<H>, heads<Heads>, depth<L>>>;
  using P = plan<M, batch<micro<1>, seq<S>>>;
  const long double want = gpt_closed_form<V, S, H, L>();
  INFO("V=" << V << " s=" << S << " h=" << H << " L=" << L);
  CHECK(static_cast<long double>(P::param_count) == want);
  CHECK(M::param_count == P::param_count);
}
}  // namespace

TEST_CASE("gpt parameter count equals the closed form", "[model][gpt][count]") {
  check_gpt_count<50257, 1024, 768, 12, 12>();   // GPT-2 124M
  check_gpt_count<50257, 1024, 1024, 16, 24>();  // GPT-2 350M
  check_gpt_count<50304, 1024, 768, 12, 12>();   // nanoGPT's padded vocabulary
  check_gpt_count<13, 8, 8, 2, 2>();             // tiny
  check_gpt_count<7, 3, 4, 1, 1>();              // smallest useful
  // Hugging Face reports 124,439,808 for gpt2: the closed form plus ln_f is that number.
  CHECK(gpt_closed_form<50257, 1024, 768, 12>() == 124439808.0L);
}

// ---- names, shapes and offsets of GPT-2 124M ----

namespace {
using gpt2_124m = gpt<gpt_config<vocab<50257>, context<1024>, width<768>, heads<12>, depth<12>>>;
using gpt2_plan = plan<gpt2_124m, batch<micro<1>, seq<1024>>>;

struct hf_param {
  std::string name;
  std::vector<std::size_t> shape;  // as Hugging Face's GPT2Model.named_parameters() reports it
};
// Hugging Face's GPT-2 parameter list, in its order (Conv1D weights are (in, out)).
std::vector<hf_param> hf_gpt2_parameters(std::size_t V, std::size_t s, std::size_t h, std::size_t L) {
  std::vector<hf_param> v{{"wte.weight", {V, h}}, {"wpe.weight", {s, h}}};
  for (std::size_t i = 0; i < L; ++i) {
    const std::string p = "h." + std::to_string(i) + ".";
    v.push_back({p + "ln_1.weight", {h}});
    v.push_back({p + "ln_1.bias", {h}});
    v.push_back({p + "attn.c_attn.weight", {h, 3 * h}});
    v.push_back({p + "attn.c_attn.bias", {3 * h}});
    v.push_back({p + "attn.c_proj.weight", {h, h}});
    v.push_back({p + "attn.c_proj.bias", {h}});
    v.push_back({p + "ln_2.weight", {h}});
    v.push_back({p + "ln_2.bias", {h}});
    v.push_back({p + "mlp.c_fc.weight", {h, 4 * h}});
    v.push_back({p + "mlp.c_fc.bias", {4 * h}});
    v.push_back({p + "mlp.c_proj.weight", {4 * h, h}});
    v.push_back({p + "mlp.c_proj.bias", {h}});
  }
  v.push_back({"ln_f.weight", {h}});
  v.push_back({"ln_f.bias", {h}});
  return v;
}
std::vector<std::size_t> exported_shape(const param_info& p) {
  std::vector<std::size_t> s = p.shape;
  if (p.export_as == export_layout::transposed) std::reverse(s.begin(), s.end());
  return s;
}
}  // namespace

TEST_CASE("gpt-2 124M: parameter names, shapes and offsets match Hugging Face", "[model][gpt][names]") {
  const auto infos = gpt2_plan::parameters();
  const auto hf = hf_gpt2_parameters(50257, 1024, 768, 12);
  REQUIRE(infos.size() == 148);
  REQUIRE(hf.size() == 148);
  CHECK(infos.front().name == "wte.weight");
  CHECK(infos[1].name == "wpe.weight");
  CHECK(infos[infos.size() - 3].name == "h.11.mlp.c_proj.bias");
  CHECK(infos[infos.size() - 2].name == "ln_f.weight");
  CHECK(infos.back().name == "ln_f.bias");

  std::size_t next = 0;
  for (std::size_t i = 0; i < infos.size(); ++i) {
    const auto& p = infos[i];
    INFO(p.name);
    CHECK(p.name == hf[i].name);
    CHECK(exported_shape(p) == hf[i].shape);
    std::size_t n = 1;
    for (auto e : p.shape) n *= e;
    CHECK(p.size == n);
    CHECK(p.offset == next);  // one contiguous block, in order
    next = p.offset + p.size;
    CHECK(gpt2_124m::find_param(p.name) == p.offset);
    CHECK(gpt2_plan::param_offset_bytes(p.name) == gpt2_plan::offsets[gpt2_plan::params] + p.offset * sizeof(float));
    CHECK(p.decay == (p.shape.size() >= 2));  // matrices decay; norms and biases don't
  }
  CHECK(next == gpt2_plan::param_count);
}

TEST_CASE("gpt-2 124M: find_param is a compile-time offset by path", "[model][gpt][names]") {
  constexpr std::size_t V = 50257, s = 1024, h = 768;
  constexpr std::size_t per_block = 12 * h * h + 13 * h;
  static_assert(gpt2_124m::find_param("wte.weight") == 0);
  static_assert(gpt2_124m::find_param("wpe.weight") == V * h);
  static_assert(gpt2_124m::find_param("h.0.ln_1.weight") == (V + s) * h);
  static_assert(gpt2_124m::find_param("h.0.attn.c_attn.weight") == (V + s) * h + 2 * h);
  static_assert(gpt2_124m::find_param("h.0.attn.c_attn.bias") == (V + s) * h + 2 * h + 3 * h * h);
  static_assert(gpt2_124m::find_param("h.3.ln_1.weight") == (V + s) * h + 3 * per_block);
  static_assert(gpt2_124m::find_param("h.11.mlp.c_proj.bias") == (V + s) * h + 12 * per_block - h);
  static_assert(gpt2_124m::find_param("ln_f.weight") == (V + s) * h + 12 * per_block);
  static_assert(gpt2_124m::find_param("ln_f.bias") == (V + s) * h + 12 * per_block + h);
  // Paths that name nothing.
  static_assert(gpt2_124m::find_param("h.12.ln_1.weight") == npos_param);
  static_assert(gpt2_124m::find_param("h.0.attn.c_attn") == npos_param);
  static_assert(gpt2_124m::find_param("lm_head.weight") == npos_param);
  static_assert(gpt2_124m::find_param("wte") == npos_param);
  static_assert(gpt2_124m::find_param("h.x.ln_1.weight") == npos_param);
  static_assert(gpt2_124m::find_param("") == npos_param);
  static_assert(gpt2_124m::find_param("h.01.ln_1.weight") == npos_param);  // not how visit_params spells it
  static_assert(gpt2_124m::find_param("h.18446744073709551617.ln_1.weight") == npos_param);  // 2^64 + 1
  static_assert(gpt2_124m::find_param("h..ln_1.weight") == npos_param);
  SUCCEED();
}

TEST_CASE("llama: parameter names, shapes and offsets", "[model][llama][names]") {
  using M = llama<llama_config<vocab<32>, context<16>, width<16>, heads<4>, kv_heads<2>, depth<3>, ffn<24>>>;
  using P = plan<M, batch<micro<1>, seq<16>>>;
  constexpr std::size_t V = 32, C = 16, H = 4, KVH = 2, D = 4, F = 24, L = 3;
  std::vector<hf_param> want{{"embed.weight", {V, C}}};
  for (std::size_t i = 0; i < L; ++i) {
    const std::string p = "layers." + std::to_string(i) + ".";
    want.push_back({p + "ln_1.weight", {C}});
    want.push_back({p + "attn.c_attn.weight", {(H + 2 * KVH) * D, C}});
    want.push_back({p + "attn.c_proj.weight", {C, H * D}});
    want.push_back({p + "ln_2.weight", {C}});
    want.push_back({p + "mlp.gate_up.weight", {2 * F, C}});
    want.push_back({p + "mlp.down.weight", {C, F}});
  }
  want.push_back({"norm.weight", {C}});
  want.push_back({"head.weight", {V, C}});

  const auto infos = P::parameters();
  REQUIRE(infos.size() == want.size());
  std::size_t next = 0;
  for (std::size_t i = 0; i < infos.size(); ++i) {
    INFO(infos[i].name);
    CHECK(infos[i].name == want[i].name);
    CHECK(infos[i].shape == want[i].shape);
    CHECK(infos[i].export_as == export_layout::as_is);
    CHECK(infos[i].offset == next);
    CHECK(M::find_param(infos[i].name) == infos[i].offset);
    next += infos[i].size;
  }
  CHECK(next == P::param_count);
  CHECK(infos.front().tp_role == role::vocab);
  CHECK(infos.back().tp_role == role::vocab);
  CHECK(M::find_param("head.weight") == P::param_count - V * C);
  CHECK(M::lookup_param_count == V * C);
}

// ---- the plan's memory layout ----

namespace {
template <class P>
void check_sections() {
  std::size_t end = 0;
  for (std::size_t i = 0; i < P::n_sections; ++i) {
    const auto s = P::section(static_cast<typename P::section_id>(i));
    INFO(std::string(s.name));
    CHECK(s.offset % 64 == 0);
    CHECK(s.offset >= end);  // no overlap with the previous section
    end = s.offset + s.bytes;
  }
  CHECK(end <= P::bytes_per_rank);
  CHECK(P::bytes_per_rank % 64 == 0);
  CHECK(P::section(P::params).bytes == P::param_count * sizeof(typename P::value_type));
  CHECK(P::section(P::logits).elements == P::rows * P::vocab_size);
  CHECK(P::section(P::tokens).bytes == P::rows * sizeof(std::int32_t));
}
}  // namespace

TEST_CASE("plan sections are 64-byte aligned, disjoint and inside bytes_per_rank", "[model][plan]") {
  check_sections<gpt2_plan>();
  check_sections<f64_plan<tiny_gpt>>();
  check_sections<f64_plan<tiny_llama>>();
  check_sections<plan<tiny_gpt, batch<micro<3>, seq<5>>>>();  // odd sizes, f32: padding needed
  check_sections<plan<tiny_llama, batch<micro<1>, seq<7>>, precision<double>>>();
}

// ---- initialisation ----

namespace {
using init_gpt = gpt<gpt_config<vocab<64>, context<16>, width<64>, heads<4>, depth<4>>>;
using init_plan = plan<init_gpt, batch<micro<1>, seq<16>>>;

bool ends_with(const std::string& s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}
}  // namespace

TEST_CASE("initialisation is deterministic per seed", "[model][init]") {
  train_options o;
  o.seed = 42;
  training_step<init_plan> a(o), b(o);
  o.seed = 43;
  training_step<init_plan> c(o);
  const auto pa = a.params(), pb = b.params(), pc = c.params();
  CHECK(std::memcmp(pa.data(), pb.data(), pa.size_bytes()) == 0);
  std::size_t same = 0;
  for (std::size_t i = 0; i < pa.size(); ++i) same += (pa[i] == pc[i]);
  // Only constant-initialised elements (norm gains, biases) may agree across seeds.
  std::size_t constant = 0;
  for (const auto& p : a.parameter_infos()) constant += p.random_init ? 0 : p.size;
  CHECK(same == constant);
}

TEST_CASE("initialisation: norms 1, biases 0, GPT-2 standard deviations", "[model][init]") {
  training_step<init_plan> st;
  const auto params = st.params();
  double proj_sum = 0, proj_sq = 0, other_sum = 0, other_sq = 0;
  std::size_t proj_n = 0, other_n = 0;
  for (const auto& p : st.parameter_infos()) {
    INFO(p.name);
    const float* x = params.data() + p.offset;
    if (ends_with(p.name, ".bias")) {
      CHECK(std::all_of(x, x + p.size, [](float v) { return v == 0.0f; }));
    } else if (p.name.find("ln_") != std::string::npos) {
      CHECK(std::all_of(x, x + p.size, [](float v) { return v == 1.0f; }));
    } else if (ends_with(p.name, "c_proj.weight")) {  // attn.c_proj and mlp.c_proj
      for (std::size_t i = 0; i < p.size; ++i) proj_sum += x[i], proj_sq += double(x[i]) * x[i];
      proj_n += p.size;
    } else {  // wte, wpe, c_attn, c_fc
      for (std::size_t i = 0; i < p.size; ++i) other_sum += x[i], other_sq += double(x[i]) * x[i];
      other_n += p.size;
    }
  }
  REQUIRE(proj_n == 4 * (64 * 64 + 256 * 64));
  const double proj_mean = proj_sum / proj_n, proj_std = std::sqrt(proj_sq / proj_n - proj_mean * proj_mean);
  const double other_mean = other_sum / other_n, other_std = std::sqrt(other_sq / other_n - other_mean * other_mean);
  // ~82k and ~70k samples: the standard deviation estimate is within ~0.3% (1σ); allow 3%.
  CHECK(proj_std == Approx(0.02 / std::sqrt(2.0 * 4)).epsilon(0.03));
  CHECK(other_std == Approx(0.02).epsilon(0.03));
  CHECK(std::abs(proj_mean) < 6 * 0.02 / std::sqrt(2.0 * 4) / std::sqrt(double(proj_n)));  // 6 sigma
  CHECK(std::abs(other_mean) < 6 * 0.02 / std::sqrt(double(other_n)));
}

// ---- training ----

namespace {
using train_gpt = gpt<gpt_config<vocab<13>, context<8>, width<16>, heads<2>, depth<2>>>;
using train_plan = plan<train_gpt, batch<micro<2>, seq<8>>>;  // f32

// `steps` AdamW steps on a repeating pattern (next token of 0 3 1 4 1 5 9 2 6 ...); returns the
// loss of each step and the final parameters.
std::vector<double> train_pattern(std::size_t steps, std::vector<float>* final_params = nullptr) {
  train_options o;
  o.optimizer.lr = 1e-2f;
  o.optimizer.weight_decay = 0.0f;
  o.seed = 5;
  training_step<train_plan> st(o);
  const std::vector<std::int32_t> pattern{0, 3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5};
  std::size_t start = 0;
  std::vector<double> losses;
  for (std::size_t s = 0; s < steps; ++s) {
    auto m = st.step([&](auto tokens, auto targets) {
      for (std::size_t i = 0; i < tokens.size(); ++i) {
        tokens[i] = pattern[(start + i) % pattern.size()];
        targets[i] = pattern[(start + i + 1) % pattern.size()];
      }
      start += 5;  // a different window each step
    });
    losses.push_back(m.loss);
  }
  if (final_params) final_params->assign(st.params().begin(), st.params().end());
  return losses;
}
}  // namespace

TEST_CASE("training a tiny gpt on a repeating pattern reduces the loss, deterministically", "[model][train]") {
  std::vector<float> p1, p2;
  const auto l1 = train_pattern(40, &p1);
  const auto l2 = train_pattern(40, &p2);
  std::ostringstream s;
  for (double l : l1) s << l << ' ';
  INFO("losses: " << s.str());
  CHECK(l1.front() == Approx(std::log(13.0)).epsilon(0.05));  // near-uniform predictions at first
  double last = 0;  // mean of the last 5 steps (windows differ, so single losses are noisy)
  for (std::size_t i = l1.size() - 5; i < l1.size(); ++i) last += l1[i] / 5;
  CHECK(last < 0.5 * l1.front());
  CHECK(l1 == l2);  // bit-identical
  CHECK(std::memcmp(p1.data(), p2.data(), p1.size() * sizeof(float)) == 0);
}

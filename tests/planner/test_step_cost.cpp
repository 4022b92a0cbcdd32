// The step model: each part of the breakdown responds to what should move it.
#include <weft/planner/step_cost.hpp>

#include <catch2/catch.hpp>

using namespace weft::planner;

namespace {
const model_desc md = gpt_desc(48, 8192, 64, 51200, 2048);  // 39B
strategy_desc base() {
  strategy_desc s{};
  s.tp = 8, s.pp = 4, s.dp = 4, s.micro = 1, s.microbatches = 16, s.recompute = recompute_kind::selective;
  return s;
}
}  // namespace

TEST_CASE("the breakdown adds up to the step", "[planner][step]") {
  const cluster c = presets::a100_80gb(16);
  const step_cost st = estimate_step(md, 2048, base(), c);
  double sum = 0;
  for (const cost_item& i : st.items) sum += i.seconds;
  CHECK(sum == Approx(st.step_seconds));
  CHECK(st.seconds(cost_part::compute) > 0);
  CHECK(st.items[static_cast<std::size_t>(cost_part::tensor_parallel)].on == link_kind::intra_node);
  CHECK(st.items[static_cast<std::size_t>(cost_part::data_parallel)].on == link_kind::inter_node);
  // model FLOPs: 6·N + 12·l·h·s per token, over the global batch
  CHECK(st.model_flops == Approx(md.flops_per_token(2048) * 4 * 16 * 2048));
  CHECK(st.hardware_flops > st.model_flops);  // selective recompute repeats the attention core
}

TEST_CASE("the bubble is (P - 1)/V micro-batches", "[planner][step]") {
  const cluster c = presets::a100_80gb(16);
  strategy_desc s = base();
  const step_cost one = estimate_step(md, 2048, s, c);
  const double per_mb = (one.seconds(cost_part::compute) + one.seconds(cost_part::recompute) +
                         one.seconds(cost_part::tensor_parallel)) / 16;
  CHECK(one.seconds(cost_part::bubble) == Approx(3 * per_mb));
  s.schedule = schedule_kind::interleaved, s.chunks = 2;
  const step_cost two = estimate_step(md, 2048, s, c);
  CHECK(two.seconds(cost_part::bubble) == Approx(one.seconds(cost_part::bubble) / 2));
  CHECK(two.seconds(cost_part::pipeline_p2p) > one.seconds(cost_part::pipeline_p2p));  // interleaving sends more
}

TEST_CASE("tensor parallelism across nodes is slower than inside one", "[planner][step]") {
  cluster c = presets::a100_80gb(16);
  const step_cost inside = estimate_step(md, 2048, base(), c);
  c.gpus_per_node = 4;  // tp = 8 now spans two nodes: 4 NICs (100 GB/s) instead of NVLink (300 GB/s)
  c.nodes = 32;
  const step_cost across = estimate_step(md, 2048, base(), c);
  CHECK(across.seconds(cost_part::tensor_parallel) > 2 * inside.seconds(cost_part::tensor_parallel));
}

TEST_CASE("gradient reduction hides behind backward", "[planner][step]") {
  const cluster c = presets::a100_80gb(4);
  const model_desc small = gpt_desc(24, 2048, 16, 51200, 2048);
  strategy_desc s{};
  s.dp = 32, s.micro = 4, s.microbatches = 4;
  job_options o{};
  const step_cost hidden = estimate_step(small, 2048, s, c, o);
  o.overlap_grad_reduce = false;
  const step_cost exposed = estimate_step(small, 2048, s, c, o);
  CHECK(hidden.seconds(cost_part::data_parallel) < exposed.seconds(cost_part::data_parallel));
  CHECK(hidden.seconds(cost_part::data_parallel) + hidden.dp_hidden_seconds == Approx(exposed.seconds(cost_part::data_parallel)));
}

TEST_CASE("recompute costs time, full more than selective", "[planner][step]") {
  const cluster c = presets::a100_80gb(16);
  strategy_desc s = base();
  s.recompute = recompute_kind::none;
  const double none = estimate_step(md, 2048, s, c).seconds(cost_part::recompute);
  s.recompute = recompute_kind::selective;
  const double sel = estimate_step(md, 2048, s, c).seconds(cost_part::recompute);
  s.recompute = recompute_kind::full;
  const step_cost full = estimate_step(md, 2048, s, c);
  CHECK(none == 0);
  CHECK(sel > 0);
  CHECK(full.seconds(cost_part::recompute) > 5 * sel);
  // the forward again: about a third of forward + backward
  CHECK(full.seconds(cost_part::recompute) == Approx(full.seconds(cost_part::compute) / 3).epsilon(0.1));
}

TEST_CASE("flash attention recomputes the scores: half of selective's attention core", "[planner][step][flash]") {
  // base(): tp 8, pp 4 (1F1B), M = 16 micro-batches of 1 sequence of 2048 tokens, 12 layers a stage.
  const cluster c = presets::a100_80gb(16);
  strategy_desc s = base();
  s.recompute = recompute_kind::none;
  const step_cost none = estimate_step(md, 2048, s, c);
  s.flash = true;
  const step_cost flash = estimate_step(md, 2048, s, c);
  // The documented amount: one Q·Kᵀ a layer, b·a/t products of (s, s, d), per micro-batch,
  // counted independently of the helper that step_cost.hpp halves.
  const double peak = c.peak_flops_16, d = 8192.0 / 64, layers = 12, M = 16, P = 4;
  const double qk = gemm_seconds(2048, 2048, d, peak, gpu_gemm_curve(), 1.0 * 64 / 8);
  CHECK(flash.seconds(cost_part::recompute) == Approx(M * layers * qk));
  CHECK(flash.seconds(cost_part::compute) == Approx(none.seconds(cost_part::compute)));
  // the bubble is (P - 1) more micro-batches of it
  CHECK(flash.step_seconds - none.step_seconds == Approx((M + P - 1) * layers * qk));
  CHECK(flash.memory.activation_bytes < none.memory.activation_bytes);
  // 2·h·s FLOPs a token and layer recomputed (the scores' share of 12·h·s)
  CHECK(flash.hardware_flops - none.hardware_flops == Approx(48.0 * 2 * 8192 * 2048 * (4 * 16 * 2048)));
  CHECK(none.hardware_flops == Approx(none.model_flops));

  // selective recomputes both attention products (fused softmax: no traffic), flash one: half
  s.flash = false, s.recompute = recompute_kind::selective;
  const step_cost sel = estimate_step(md, 2048, s, c);
  CHECK(flash.seconds(cost_part::recompute) == Approx(sel.seconds(cost_part::recompute) / 2));
  CHECK(flash.step_seconds < sel.step_seconds);
  // with flash, selective adds nothing: it has no probabilities left to drop
  s.flash = true;
  const step_cost sel_flash = estimate_step(md, 2048, s, c);
  CHECK(sel_flash.step_seconds == flash.step_seconds);
  CHECK(sel_flash.hardware_flops == flash.hardware_flops);
  CHECK(sel_flash.memory.total() == flash.memory.total());
  // full re-runs a flash forward, then its backward recomputes the scores again
  s.recompute = recompute_kind::full;
  const step_cost full_flash = estimate_step(md, 2048, s, c);
  s.flash = false;
  const step_cost full = estimate_step(md, 2048, s, c);
  CHECK(full_flash.seconds(cost_part::recompute) - full.seconds(cost_part::recompute) == Approx(M * layers * qk));
  CHECK(full_flash.memory.total() == full.memory.total());
}

TEST_CASE("flash attention moves no (s, s) softmax through memory", "[planner][step][flash]") {
  const cluster c = presets::a100_80gb(16);
  strategy_desc s = base();
  s.recompute = recompute_kind::none;
  job_options unfused{};
  unfused.fused_attention = false;
  const double fused_compute = estimate_step(md, 2048, s, c).seconds(cost_part::compute);
  CHECK(estimate_step(md, 2048, s, c, unfused).seconds(cost_part::compute) > fused_compute);
  s.flash = true;  // the flash kernels, whatever fused_attention says
  CHECK(estimate_step(md, 2048, s, c, unfused).seconds(cost_part::compute) == Approx(fused_compute));
}

TEST_CASE("a sliding window shortens the attention products of fused kernels only", "[planner][step]") {
  // Mistral 7B's shape at a 32k sequence with a 4096-key window
  model_desc whole = llama_desc(32, 4096, 32, 8, 32000, 32768, 14336);
  model_desc windowed = whole;
  windowed.window = 4096;
  const cluster c = presets::h100_sxm(4);
  strategy_desc s{};
  s.tp = 8, s.pp = 1, s.dp = 4, s.micro = 1, s.microbatches = 8, s.flash = true;
  const step_cost a = estimate_step(whole, 32768, s, c), w = estimate_step(windowed, 32768, s, c);
  // the scores and context products cover 4096 keys of 32768: far less compute, and the model
  // and hardware FLOPs fall with them
  CHECK(w.seconds(cost_part::compute) < 0.6 * a.seconds(cost_part::compute));
  CHECK(w.model_flops < a.model_flops);
  CHECK(w.hardware_flops - w.model_flops < a.hardware_flops - a.model_flops);
  // an unfused kernel forms the whole square and masks it: no saving in time
  s.flash = false;
  job_options unfused{};
  unfused.fused_attention = false;
  const step_cost ua = estimate_step(whole, 32768, s, c, unfused), uw = estimate_step(windowed, 32768, s, c, unfused);
  CHECK(uw.seconds(cost_part::compute) == Approx(ua.seconds(cost_part::compute)));
  // a window of the sequence or more changes nothing
  model_desc long_window = whole;
  long_window.window = 32768;
  s.flash = true;
  CHECK(estimate_step(long_window, 32768, s, c).step_seconds == Approx(a.step_seconds));
}

TEST_CASE("attention products use the head size apart from width / heads", "[planner][step]") {
  // Qwen 3-like: 16 heads of 128 on a width of 1024 work in 2048 wide attention
  model_desc narrow = llama_desc(28, 1024, 16, 8, 151936, 4096, 3072);
  model_desc wide = narrow;
  wide.head_dim = 128;
  const cluster c = presets::h100_sxm(1);
  strategy_desc s{};
  s.tp = 1, s.pp = 1, s.dp = 8, s.micro = 4, s.microbatches = 1;
  // the scores and context products: heads of 128 against heads of 64, twice the FLOPs (at a
  // better GEMM efficiency, so less than twice the time)
  const double wide_core = detail::layer_forward_gemm_seconds(wide, 4096, s, c.peak_flops_16, gpu_gemm_curve(), true, 4096);
  const double narrow_core = detail::layer_forward_gemm_seconds(narrow, 4096, s, c.peak_flops_16, gpu_gemm_curve(), true, 4096);
  CHECK(wide_core > 1.3 * narrow_core);
  // and the projections in and out of the 2048-wide attention: more compute per step
  CHECK(estimate_step(wide, 4096, s, c).seconds(cost_part::compute) >
        1.15 * estimate_step(narrow, 4096, s, c).seconds(cost_part::compute));
}

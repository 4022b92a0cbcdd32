// The cost-model terms of issue 31, each against a case computed by hand from its formula
// (docs/planner.md): ZeRO-3 from its schedule, pipeline sends per tensor-parallel rank, partial
// recomputation, the memory terms, context parallelism, FP8, cluster presets and the failure rate.
#include <weft/planner/run_cost.hpp>
#include <weft/planner/search.hpp>

#include <catch2/catch.hpp>

using namespace weft::planner;

// ---- ZeRO-3 / FSDP: per layer gathers and reduce-scatters, hidden behind that layer's compute ----

TEST_CASE("zero3 schedule: hand-computed exposure, slow and fast layers", "[planner][terms][zero3]") {
  const model_desc md = gpt_desc(4, 1024, 16, 51200, 2048);
  const cluster c = presets::a100_80gb(8);
  strategy_desc s{};
  s.dp = 64, s.zero = 3;
  const link_spec dl = axis_link(c, 64, 1);
  // 8 ranks a node drive 8 NICs of 25 GB/s (200 GB/s < NVLink's 300), at 80%; 10 µs a step.
  REQUIRE(dl.kind == link_kind::inter_node);
  REQUIRE(dl.bandwidth == Approx(160e9));
  const double h = 1024, f = 4096;
  const double blk = 6 * h + 3 * h * h + 3 * h + h * h + h * f + f + f * h;  // gpt_desc's block
  const double psi = static_cast<double>(md.stage_params(0, 1, 1));
  const double root = psi - 4 * blk;
  const double ring = 63.0 / 64.0, alpha = 63 * 10e-6, beta = 160e9;
  const double ag = alpha + ring * blk * 2 / beta, rs = alpha + ring * blk * 2 / beta;
  const double ag_root = alpha + ring * root * 2 / beta, rs_root = ag_root;
  const precision_desc p{};
  // Layers that compute for a microsecond hide nothing: all but nothing is exposed.
  const auto slow = detail::zero3_schedule(md, s, psi, 1e-6, 0, p, dl, true);
  CHECK(slow.total == Approx(ag_root + rs_root + 4 * (2 * ag + rs)));
  CHECK(slow.exposed == Approx(ag_root + ag + 3 * (ag - 1e-6) + ag + 3 * (ag + rs - 2e-6) + rs + rs_root));
  // Layers that compute for a second hide every gather but the first of each pass, and every
  // reduce-scatter but the last.
  const auto fast = detail::zero3_schedule(md, s, psi, 1.0, 0, p, dl, true);
  CHECK(fast.exposed == Approx(ag_root + 2 * ag + rs + rs_root));
  // No prefetch: every gather waits for its layer.
  s.prefetch = 0;
  const auto none = detail::zero3_schedule(md, s, psi, 1.0, 0, p, dl, true);
  CHECK(none.exposed == Approx(ag_root + rs_root + 8 * ag + rs));
  // No overlap at all: everything.
  s.prefetch = 1;
  CHECK(detail::zero3_schedule(md, s, psi, 1.0, 0, p, dl, false).exposed == Approx(fast.total));
}

TEST_CASE("zero3 per parameter tensor (DeepSpeed of 2021): 12 ring latencies a collective of a GPT block", "[planner][terms][zero3]") {
  const model_desc md = gpt_desc(4, 1024, 16, 51200, 2048);
  const cluster c = presets::a100_80gb(8);
  strategy_desc s{};
  s.dp = 64, s.zero = 3;
  const link_spec dl = axis_link(c, 64, 1);
  REQUIRE(block_parameter_tensors(md) == 12);  // ln_1 w b, qkv w b, proj w b, ln_2 w b, fc w b, proj w b
  REQUIRE(block_parameter_tensors(llama_desc(2, 512, 8, 8, 1000, 128)) == 9);
  const double h = 1024, f = 4096;
  const double blk = 6 * h + 3 * h * h + 3 * h + h * h + h * f + f + f * h;
  const double psi = static_cast<double>(md.stage_params(0, 1, 1));
  const double root = psi - 4 * blk;
  const double ring = 63.0 / 64.0, alpha = 63 * 10e-6, beta = 160e9;
  // the same bytes as one block-wide collective, in 12 pieces of 12 latencies
  const double ag = 12 * alpha + ring * blk * 2 / beta, rs = ag;
  const double ag_root = alpha + ring * root * 2 / beta, rs_root = ag_root;
  const precision_desc p{};
  const auto z = detail::zero3_schedule(md, s, psi, 1.0, 0, p, dl, false, 12);
  CHECK(z.total == Approx(ag_root + rs_root + 4 * (2 * ag + rs)));
  CHECK(z.exposed == Approx(z.total));
  // full recompute: DeepSpeed's hooks gather a layer once more for its recomputed forward
  const auto rc = detail::zero3_schedule(md, s, psi, 1.0, 1.0, p, dl, false, 12);
  CHECK(rc.total == Approx(ag_root + rs_root + 4 * (3 * ag + rs)));
  // (one collective a block, FSDP's unit or weft's window: the recomputation runs inside the backward's gather)
  CHECK(detail::zero3_schedule(md, s, psi, 1.0, 1.0, p, dl, false, 1).total ==
        Approx(detail::zero3_schedule(md, s, psi, 1.0, 0, p, dl, false, 1).total));
  // overlapped, with layers that compute for a second: the first re-gather pass exposes 2 gathers
  const auto rco = detail::zero3_schedule(md, s, psi, 1.0, 1.0, p, dl, true, 12);
  CHECK(rco.exposed == Approx(ag_root + ag + ag + ag + rs + rs_root));
  // through estimate_step: zero3_buffers::per_tensor selects it, and a large ring pays for it
  s.micro = 1, s.microbatches = 1, s.dp = presets::a100_80gb(64).gpus();
  const cluster big = presets::a100_80gb(64);
  strategy_desc units = s, tensors = s;
  units.zero3_holds = zero3_buffers::per_layer_units, tensors.zero3_holds = zero3_buffers::per_tensor;
  const double t1 = estimate_step(md, 2048, units, big).seconds(cost_part::data_parallel);
  const double t12 = estimate_step(md, 2048, tensors, big).seconds(cost_part::data_parallel);
  // 4 layers x 3 collectives x 11 more latencies of 511 steps, nearly all exposed (a tiny model's layer
  // computes for far less than 11 x 5 ms)
  CHECK(t12 > t1 + 0.9 * 4 * 3 * 11 * 511 * 10e-6);
  CHECK(t12 < t1 + 4 * 3 * 11 * 511 * 10e-6 + 1e-9);
  // memory: a tensor's buffers, not a block's — the MLP matrices (h·4h) are the largest tensors
  REQUIRE(md.largest_block_tensor(1) == static_cast<std::size_t>(h * f));
  const stage_memory mu = peak_stage_memory(md, 2048, units), mt = peak_stage_memory(md, 2048, tensors);
  // gathered: the block computing and one prefetched (2 bytes), gradients of two (2 bytes): 4 pieces each way
  CHECK(static_cast<double>(mu.working_bytes - mt.working_bytes) == Approx(4 * 2 * (blk - h * f)));
}

TEST_CASE("zero3 loses per-GPU rate as dp grows (the latency of 3 collectives a layer)", "[planner][terms][zero3]") {
  // LLaMA-7B, ZeRO-3 over all GPUs, one sequence of 2048 a GPU: the old model (all traffic
  // behind all compute) predicted flat scaling; per layer, the ring's (n - 1)·α grows with dp.
  const model_desc md = llama_desc(32, 4096, 32, 32, 32000, 2048, 11008);
  strategy_desc s{};
  s.zero = 3, s.micro = 1, s.microbatches = 1;
  auto per_gpu = [&](std::size_t nodes) {
    const cluster c = presets::a100_80gb(nodes);
    s.dp = c.gpus();
    const step_cost st = estimate_step(md, 2048, s, c);
    return 2048.0 / st.step_seconds;  // tokens/s per GPU
  };
  const double small = per_gpu(2), large = per_gpu(64);
  CHECK(large < 0.8 * small);
}

TEST_CASE("zero3 memory: FSDP's per-layer units hold prefetch + 1 blocks, at any pipeline depth", "[planner][terms][zero3]") {
  const model_desc md = llama_desc(32, 4096, 32, 32, 32000, 2048, 11008);
  strategy_desc s{};
  s.dp = 16, s.zero = 3, s.pp = 2, s.microbatches = 4;
  const precision_desc p{};
  const stage_memory weft_held = peak_stage_memory(md, 2048, s, p);
  s.zero3_holds = zero3_buffers::per_layer_units;
  const stage_memory units = peak_stage_memory(md, 2048, s, p);
  const std::size_t blk = md.block.per_rank(1);
  const std::size_t params = units.params, root = params - 16 * blk;
  // gathered: root + 2 blocks of 2-byte parameters; gradients: root + 2 blocks of 2 bytes
  CHECK(units.working_bytes == (root + 2 * blk) * 2 + (root + 2 * blk) * 2);
  // weft's executor under a pipeline gathers the whole stage
  CHECK(weft_held.working_bytes == params * 2 + params * 2);
  CHECK(units.total() < weft_held.total());
  s.prefetch = 3;
  CHECK(peak_stage_memory(md, 2048, s, p).working_bytes == (root + 4 * blk) * 2 + (root + 2 * blk) * 2);
}

// ---- pipeline sends per tensor-parallel rank ----

TEST_CASE("pipeline p2p: Megatron's scatter-gather sends 1/t and gathers on arrival", "[planner][terms][p2p]") {
  const model_desc md = gpt_desc(48, 8192, 64, 51200, 2048);
  const cluster c = presets::a100_80gb(16);
  strategy_desc s{};
  s.tp = 8, s.pp = 4, s.dp = 4, s.micro = 1, s.microbatches = 16, s.recompute = recompute_kind::full;
  job_options o{};
  const step_cost whole = estimate_step(md, 2048, s, c, o);
  o.scatter_gather_p2p = true;
  const step_cost split = estimate_step(md, 2048, s, c, o);
  const double act = 2048.0 * 1 * 8192 * 2;  // (s, b, h) in bf16
  const link_spec pl = axis_link(c, 4, 8 * 4), tl = axis_link(c, 8, 1);
  REQUIRE(pl.kind == link_kind::inter_node);
  const double sends = 2 * (16 + 4 - 1);
  CHECK(whole.seconds(cost_part::pipeline_p2p) == Approx(sends * (pl.latency + act / pl.bandwidth)));
  const double gather = 7 * tl.latency + 7.0 / 8.0 * act / tl.bandwidth;
  CHECK(split.seconds(cost_part::pipeline_p2p) == Approx(sends * (pl.latency + act / 8 / pl.bandwidth + gather)));
  CHECK(split.seconds(cost_part::pipeline_p2p) < whole.seconds(cost_part::pipeline_p2p) / 2);
  // with sequence parallelism the activation is split already: the option changes nothing
  s.sequence_parallel = true, s.recompute = recompute_kind::selective;
  o.scatter_gather_p2p = false;
  const double sp_off = estimate_step(md, 2048, s, c, o).seconds(cost_part::pipeline_p2p);
  o.scatter_gather_p2p = true;
  CHECK(estimate_step(md, 2048, s, c, o).seconds(cost_part::pipeline_p2p) == Approx(sp_off));
}

// ---- partial recomputation (Megatron's recompute_num_layers) ----

TEST_CASE("partial recompute: k blocks a stage recomputed, priced and kept", "[planner][terms][recompute]") {
  const model_desc md = gpt_desc(48, 8192, 64, 51200, 2048);
  const cluster c = presets::a100_80gb(16);
  strategy_desc s{};
  s.tp = 8, s.pp = 4, s.dp = 4, s.micro = 1, s.microbatches = 16, s.recompute = recompute_kind::full;
  const step_cost all = estimate_step(md, 2048, s, c);
  s.recompute_layers = 3;  // of the 12 blocks of a stage
  const step_cost three = estimate_step(md, 2048, s, c);
  CHECK(three.seconds(cost_part::recompute) == Approx(all.seconds(cost_part::recompute) * 3 / 12));
  // tensor-parallel traffic: 6 collectives a recomputed block, 4 the others
  CHECK(three.seconds(cost_part::tensor_parallel) == Approx(all.seconds(cost_part::tensor_parallel) * (4 * 12 + 2 * 3) / (6 * 12)));
  // memory: 3 blocks keep their input, 9 all they compute, for each set in flight
  const weft::layer_activation_dims dims{2048, 1, 8192, 64, 64, 4 * 8192, false, 2, 0, 0, 0, 0, 1, 0, 0};
  const std::size_t in = weft::layer_activation_bytes(dims, 8, false, recompute_kind::full);
  const std::size_t kept = weft::layer_activation_bytes(dims, 8, false, recompute_kind::none);
  REQUIRE(in == 2048u * 8192u * 2u);
  const stage_memory m = stage_memory_of(md, 2048, s, {}, sets_in_flight(s), 0);
  CHECK(m.activation_bytes == (3 * in + 9 * kept) * 4);  // stage 0 of 4 holds 4 sets under 1F1B
  CHECK(three.hardware_flops < all.hardware_flops);
  CHECK(three.hardware_flops > three.model_flops);
}

TEST_CASE("partial recompute as a search dimension: the fewest blocks that fit", "[planner][terms][recompute]") {
  const model_desc md = gpt_desc(48, 8192, 64, 51200, 2048);
  cluster c = presets::a100_80gb(16);
  search_options o{};
  o.fixed_tp = 8, o.fixed_pp = 4, o.fixed_micro = 1, o.fix_zero = true, o.zero = 0, o.allow_sequence_parallel = false;
  o.allow_gpipe = false, o.allow_interleaved = false;
  const batch_desc b{64, 2048};
  // memory such that selective does not fit but full does, with room between
  strategy_desc s{};
  s.tp = 8, s.pp = 4, s.dp = 4, s.micro = 1, s.microbatches = 16;
  s.recompute = recompute_kind::selective;
  const double selective = static_cast<double>(peak_stage_memory(md, 2048, s).total());
  s.recompute = recompute_kind::full;
  const double full = static_cast<double>(peak_stage_memory(md, 2048, s).total());
  c.memory_bytes = (full + 0.5 * (selective - full)) / c.usable_memory_fraction;
  const auto plain = search<1>(md, b, c, o);
  REQUIRE(plain.found());
  CHECK(plain.best().strategy.recompute == recompute_kind::full);
  CHECK(plain.best().strategy.recompute_layers == 0);
  o.partial_recompute = true;
  const auto part = search<1>(md, b, c, o);
  REQUIRE(part.found());
  const std::size_t k = part.best().strategy.recompute_layers;
  CHECK(k > 0);
  CHECK(k < 12);
  CHECK(part.best().cost.step_seconds < plain.best().cost.step_seconds);
  // k is the fewest: k - 1 does not fit
  s = part.best().strategy;
  s.recompute_layers = k - 1;
  if (k > 1) CHECK(static_cast<double>(peak_stage_memory(md, 2048, s).total()) > part.memory_limit);
}

// ---- memory terms ----

TEST_CASE("memory: 18 bytes a parameter with f32 main gradients (Megatron's 6 + 12/d distributed)", "[planner][terms][memory]") {
  const model_desc md = llama_desc(32, 4096, 32, 32, 32000, 2048, 11008);
  strategy_desc s{};
  s.dp = 8;
  const precision_desc p = mixed_bf16_f32_grads();
  CHECK(p.states.total() == 18);
  const stage_memory m0 = peak_stage_memory(md, 2048, s, p);
  const std::size_t psi = md.params();
  CHECK(m0.model_state_bytes() == 18 * psi);
  s.zero = 1;
  const stage_memory m1 = peak_stage_memory(md, 2048, s, p);
  CHECK(static_cast<double>(m1.model_state_bytes()) == Approx(6.0 * psi + 12.0 * psi / 8).epsilon(1e-6));
  // the gradient all-reduce moves 4 bytes a parameter: twice the bf16 time
  s.zero = 0;
  const cluster c = presets::a100_80gb(1);
  job_options o{};
  o.overlap_grad_reduce = false;
  const double bf16 = estimate_step(md, 2048, s, c, o).seconds(cost_part::data_parallel);
  o.precision = p;
  const double f32 = estimate_step(md, 2048, s, c, o).seconds(cost_part::data_parallel);
  const link_spec dl = axis_link(c, 8, 1);
  CHECK(f32 - bf16 == Approx(2 * 7.0 / 8.0 * 2.0 * psi / dl.bandwidth).epsilon(1e-6));
}

TEST_CASE("memory: allocator fragmentation and framework bytes as explicit terms", "[planner][terms][memory]") {
  const model_desc md = llama_desc(32, 4096, 32, 32, 32000, 2048, 11008);
  strategy_desc s{};
  s.tp = 2, s.dp = 4, s.zero = 1, s.recompute = recompute_kind::selective;
  const cluster c = presets::a100_80gb(1);
  job_options o{};
  const step_cost plain = estimate_step(md, 2048, s, c, o);
  CHECK(plain.memory_overhead == 0);
  CHECK(plain.memory_required() == Approx(static_cast<double>(plain.memory.total())));
  o.allocator_overhead = 0.25, o.framework_bytes = 3e9;
  const step_cost more = estimate_step(md, 2048, s, c, o);
  CHECK(more.memory_overhead == Approx(0.25 * static_cast<double>(plain.memory.total()) + 3e9));
  CHECK(more.step_seconds == Approx(plain.step_seconds));
  // the search fits against the required bytes: a limit between the two drops the strategy
  search_options so{};
  so.fixed_tp = 2, so.fixed_pp = 1, so.fixed_micro = 1, so.fix_zero = true, so.zero = 1, so.fix_recompute = true,
  so.recompute = recompute_kind::selective, so.fix_sequence_parallel = true;
  cluster tight = c;
  tight.memory_bytes = (static_cast<double>(plain.memory.total()) + 0.5 * more.memory_overhead) / tight.usable_memory_fraction;
  CHECK(search<1>(md, {8, 2048}, tight, so).found());
  so.job = o;
  CHECK_FALSE(search<1>(md, {8, 2048}, tight, so).found());
}

// ---- new inputs: FP8, presets, the failure rate ----

TEST_CASE("fp8: the linear layers at the FP8 peak, attention and head at 16-bit", "[planner][terms][fp8]") {
  const model_desc md = gpt_desc(4, 4096, 32, 51200, 2048);
  const cluster c = presets::h100_sxm(1);
  REQUIRE(c.peak_flops_8 == 1979e12);
  strategy_desc s{};
  s.tp = 8, s.micro = 2;
  job_options o{};
  const step_cost bf16 = estimate_step(md, 2048, s, c, o);
  o.fp8 = true;
  const step_cost fp8 = estimate_step(md, 2048, s, c, o);
  // by hand: the four linear products of a layer, forward + backward, at each rate
  const gemm_curve g = gpu_gemm_curve();
  const double m = 2 * 2048.0, h = 4096, f = 4 * 4096.0;
  auto linear = [&](double peak) {
    return gemm_seconds(m, 3 * h / 8, h, peak, g) + gemm_seconds(m, h, h / 8, peak, g) + gemm_seconds(m, f / 8, h, peak, g) +
           gemm_seconds(m, h, f / 8, peak, g);
  };
  const double saved = 3 * 4 * (linear(989e12) - linear(1979e12));
  CHECK(bf16.seconds(cost_part::compute) - fp8.seconds(cost_part::compute) == Approx(saved).epsilon(1e-9));
  CHECK(fp8.model_flops == Approx(bf16.model_flops));
  // no FP8 tensor cores (A100): nothing changes
  const cluster a = presets::a100_80gb(1);
  REQUIRE(a.peak_flops_8 == 0);
  CHECK(estimate_step(md, 2048, s, a, o).step_seconds == Approx(estimate_step(md, 2048, s, a, {}).step_seconds));
}

TEST_CASE("presets: H800's NVLink, B200, and the failure rate from Llama 3", "[planner][terms][cluster]") {
  const cluster h8 = find_preset("h800", 2).value, h1 = presets::h100_sxm(2);
  CHECK(h8.intra_bandwidth == 200e9);
  CHECK(h8.peak_flops_16 == h1.peak_flops_16);
  // tensor parallelism over NVLink: its all-reduces take 450/200 as long (bandwidth-bound)
  const model_desc md = gpt_desc(8, 8192, 64, 51200, 2048);
  strategy_desc s{};
  s.tp = 8, s.dp = 2, s.micro = 4, s.sequence_parallel = true;
  const double tp8 = estimate_step(md, 2048, s, h8).seconds(cost_part::tensor_parallel);
  const double tp1 = estimate_step(md, 2048, s, h1).seconds(cost_part::tensor_parallel);
  // by hand: 8 layers · 4 · (reduce-scatter + all-gather) of (s, b, h) over 8 ranks on NVLink
  const double act = 2048.0 * 4 * 8192 * 2;
  auto rs = [&](double bw) { return 7 * 5e-6 + 7.0 / 8.0 * act / (bw * 0.8); };
  CHECK(tp8 == Approx(8 * 4 * 2 * rs(200e9)));
  CHECK(tp1 == Approx(8 * 4 * 2 * rs(450e9)));
  CHECK(tp8 / tp1 > 2);
  const preset_lookup b = find_preset("b200", 1);
  REQUIRE(b.found);
  CHECK(b.value.peak_flops_16 == 2250e12);
  CHECK(b.value.peak_flops_8 == 4500e12);
  CHECK(b.value.intra_bandwidth == 900e9);
  // 419 unexpected interruptions in 54 days on 2,048 nodes
  CHECK(cluster{}.failures_per_node_day == Approx(0.003789).epsilon(1e-3));
  CHECK(presets::h100_sxm(1).failures_per_node_day == Approx(419.0 / 54 / 2048));
  // on that job's 2,048 nodes the MTBF is 54 days / 419 = 3.09 hours
  const cluster llama = presets::h100_sxm(2048);
  const step_cost st = estimate_step(md, 2048, s, presets::h100_sxm(1));
  CHECK(estimate_run(md, st, 1, 1e9, llama.gpus(), llama).mtbf_seconds / 3600 == Approx(54.0 * 24 / 419).epsilon(1e-6));
}

// ---- context parallelism ----

TEST_CASE("context parallelism: s/cp tokens a rank, the ring's K/V traffic exposed where it outlasts attention", "[planner][terms][cp]") {
  const model_desc md = llama_desc(4, 4096, 32, 8, 32000, 32768, 14336);
  cluster c = presets::h100_sxm(2);
  strategy_desc s{};
  s.tp = 8, s.cp = 2, s.micro = 1, s.flash = true;
  const precision_desc p{};
  // memory: a rank keeps what a sequence of s/cp keeps; ZeRO-1 shards over dp·cp = 2
  s.zero = 1;
  strategy_desc half = s;
  half.cp = 1, half.dp = 2;
  const stage_memory m = peak_stage_memory(md, 32768, s, p), mh = peak_stage_memory(md, 16384, half, p);
  CHECK(m.activation_bytes == mh.activation_bytes);
  CHECK(m.optimizer_bytes == mh.optimizer_bytes);
  CHECK(m.total() == mh.total());
  // time: slow the inter-node link until the ring shows, and price it by hand
  c.inter_bandwidth = 1e9;
  const step_cost st = estimate_step(md, 32768, s, c);
  const link_spec cl = axis_link(c, 2, 8);
  REQUIRE(cl.kind == link_kind::inter_node);
  const double kv_block = 2 * 1 * 16384.0 * 8 * 128 / 8 * 2;  // K and V of 16384 tokens, 1 of 8 kv heads a rank
  const double core = detail::layer_forward_gemm_seconds(md, 16384, s, c.peak_flops_16, gpu_gemm_curve(), true, 32768);
  const double fwd = std::max(0.0, cl.latency + kv_block / cl.bandwidth - core / 2);
  const double bwd = std::max(0.0, cl.latency + 2 * kv_block / cl.bandwidth - core);
  REQUIRE(fwd > 0);
  CHECK(st.seconds(cost_part::context_parallel) == Approx(4 * (fwd + bwd)));
  CHECK(st.items[static_cast<std::size_t>(cost_part::context_parallel)].on == link_kind::inter_node);
  // FLOPs count the whole sequence, once
  CHECK(st.model_flops == Approx(md.flops_per_token(32768) * 32768));
  // the search tries cp only when asked
  search_options o{};
  o.flash = true;
  const auto plain = search<1>(md, {16, 32768}, presets::h100_sxm(2), o);
  o.max_cp = 4;
  const auto with_cp = search<4>(md, {16, 32768}, presets::h100_sxm(2), o);
  CHECK(with_cp.evaluated > plain.evaluated);
  CHECK(plain.best().strategy.cp == 1);
}

// ---- uneven pipeline stages ----

TEST_CASE("uneven stages: 70 blocks on 12 stages, 5 on the first and the last", "[planner][terms][stages]") {
  const model_desc md = gpt_desc(70, 8192, 64, 51200, 2048);
  strategy_desc s{};
  s.tp = 8, s.pp = 12, s.dp = 1, s.micro = 1, s.microbatches = 24, s.recompute = recompute_kind::full;
  CHECK_FALSE(s.stages_cover(70));
  s.first_stage_layers = 5, s.last_stage_layers = 5;
  REQUIRE(s.stages_cover(70));
  CHECK(s.middle_stage_layers(70) == 6);
  CHECK(s.stage_layers(70, 0) == 5);
  CHECK(s.stage_layers(70, 11) == 5);
  // memory: stage 0 holds 5 blocks' parameters and the embeddings
  const stage_memory m0 = stage_memory_at(md, 2048, s, {}, 0);
  CHECK(m0.params == 5 * md.block.per_rank(8) + md.pre.per_rank(8));
  CHECK(m0.layers == 5);
  // time: the slowest stage paces the pipeline — a middle one (6 blocks) or the last (5 and the
  // head): the compute is M·(3·fwd·L + head) with L and the head of that stage
  const cluster c = presets::a100_80gb(12);
  const step_cost st = estimate_step(md, 2048, s, c);
  strategy_desc even = s;  // the same blocks per stage everywhere: 6, on 72 blocks
  even.first_stage_layers = even.last_stage_layers = 0;
  const model_desc md72 = gpt_desc(72, 8192, 64, 51200, 2048);
  const step_cost e72 = estimate_step(md72, 2048, even, c);
  // fwd of a block is the same; 72 blocks on 12 even stages: 6 blocks + the head on the last
  const double fwd3 = e72.seconds(cost_part::recompute) / 24 / 6 * 3;  // 3·fwd of one block
  const double head72 = e72.seconds(cost_part::compute) / 24 - 6 * fwd3;
  REQUIRE(head72 > 0);
  const double slowest = std::max(6 * fwd3, 5 * fwd3 + head72);
  CHECK(st.seconds(cost_part::compute) / 24 == Approx(slowest));
  // the search takes pinned uneven stages where pp does not divide the depth
  search_options o{};
  o.fixed_tp = 8, o.fixed_pp = 12, o.first_stage_layers = 5, o.last_stage_layers = 5;
  const auto r = search<1>(md, {96, 2048}, c, o);
  REQUIRE(r.found());
  CHECK(r.best().strategy.first_stage_layers == 5);
  o.first_stage_layers = o.last_stage_layers = 0;
  CHECK_FALSE(search<1>(md, {96, 2048}, c, o).found());
}

TEST_CASE("uneven stages interleaved: Llama 3 405B's 126 blocks on 16 stages (7, 8 x 14, 7) in V chunks", "[planner][terms][stages]") {
  const model_desc md = llama_desc(126, 16384, 128, 8, 128256, 8192, 53248);
  strategy_desc s{};
  s.tp = 8, s.pp = 16, s.dp = 1, s.micro = 1, s.microbatches = 32, s.sequence_parallel = true, s.flash = true;
  s.first_stage_layers = 7, s.last_stage_layers = 7;
  s.schedule = schedule_kind::interleaved, s.chunks = 2;
  REQUIRE(s.stages_cover(126));
  CHECK(s.chunk_layers(126, 0, 2) == 4);  // 7 blocks: chunks of 4 and 3
  CHECK(s.chunk_layers(126, 1, 2) == 4);  // 8 blocks: 4 and 4
  s.chunks = 8;
  CHECK_FALSE(s.stages_cover(126));  // 7 blocks cannot form 8 chunks
  s.chunks = 3;
  CHECK_FALSE(s.stages_cover(126));  // the middle stages' 8 blocks do not split in 3 equal chunks
  s.chunks = 4;
  REQUIRE(s.stages_cover(126));
  // memory: stage 0 holds its 7 blocks' parameters, activations of ⌈7/4⌉ = 2 blocks a chunk set
  const stage_memory m0 = stage_memory_at(md, 8192, s, {}, 0);
  CHECK(m0.layers == 7);
  CHECK(m0.params == 7 * md.block.per_rank(8) + md.pre.per_rank(8));
  CHECK(m0.activation_bytes == m0.layer_bytes * 2 * m0.activation_sets);
  // time: the bubble is (P − 1)/V of a micro-batch of the pacing stage (8 blocks), so V = 4 has
  // half V = 2's with the same per-micro-batch work (no recompute: nothing depends on the chunk)
  const cluster c = presets::h100_sxm(16);
  const step_cost v4 = estimate_step(md, 8192, s, c);
  s.chunks = 2;
  const step_cost v2 = estimate_step(md, 8192, s, c);
  CHECK(v4.seconds(cost_part::compute) == Approx(v2.seconds(cost_part::compute)));
  CHECK(v4.seconds(cost_part::bubble) == Approx(v2.seconds(cost_part::bubble) / 2));
  strategy_desc flat = s;
  flat.schedule = schedule_kind::one_f_one_b, flat.chunks = 1;
  CHECK(estimate_step(md, 8192, flat, c).seconds(cost_part::bubble) == Approx(2 * v2.seconds(cost_part::bubble)));
  // the search prices the interleaved schedule with the pinned uneven stages
  search_options o{};
  o.fixed_tp = 8, o.fixed_pp = 16, o.fixed_dp = 1, o.first_stage_layers = 7, o.last_stage_layers = 7, o.flash = true;
  o.fix_schedule = true, o.schedule = schedule_kind::interleaved;
  const auto r = search<1>(md, {32, 8192}, c, o);
  REQUIRE(r.found());
  CHECK(r.best().strategy.schedule == schedule_kind::interleaved);
  CHECK((r.best().strategy.chunks == 2 || r.best().strategy.chunks == 4));
}

// ---- DeepSeek-style mixtures: shared experts, dense first blocks ----

TEST_CASE("moe: shared experts and dense first blocks, counted and priced", "[planner][terms][moe]") {
  const std::size_t L = 4, h = 512, E = 8, k = 2, f = 256, shared = 256, D = 1, df = 1024;
  const model_desc routed = moe_llama_desc(L, h, 8, 8, 1000, 256, E, k, f);
  const model_desc md = with_shared_and_dense(routed, shared, D, df);
  // by hand: attention and norms in every block, (L - D) mixtures (router, E SwiGLU experts, the
  // shared SwiGLU expert), D dense SwiGLU MLPs, the embeddings and head
  const double attn = 2.0 * h + 4.0 * h * h;
  const double mix = E * h + E * 3.0 * h * f + 3.0 * h * shared;
  const double hand = 1000.0 * h + (h + 1000.0 * h) + L * attn + (L - D) * mix + D * 3.0 * h * df;
  CHECK(static_cast<double>(md.params()) == Approx(hand).epsilon(1e-6));
  CHECK(md.moe_layers == 3);
  CHECK(md.expert_params == 3 * E * 3 * h * f);
  // a token uses k of E experts in each of the L - D mixtures: the inactive ones are not FLOPs
  const double active = hand - (L - D) * (E - k) * 3.0 * h * f - 1000.0 * h;  // less the looked-up table
  CHECK(md.flops_per_token(256) == Approx(6 * active + 12.0 * L * h * 256).epsilon(1e-6));
  // every block dense: the GEMMs of a dense LLaMA of width df
  strategy_desc s{};
  s.tp = 2, s.micro = 2;
  const gemm_curve g = gpu_gemm_curve();
  const model_desc all_dense = with_shared_and_dense(routed, shared, L, df);
  const model_desc llama = llama_desc(L, h, 8, 8, 1000, 256, df);
  CHECK(detail::layer_forward_gemm_seconds(all_dense, 256, s, 312e12, g, false, 256) ==
        Approx(detail::layer_forward_gemm_seconds(llama, 256, s, 312e12, g, false, 256)));
  // the shared expert adds its two products (whole on each tp rank) to each mixture block
  const model_desc no_shared = with_shared_and_dense(routed, 0, D, df);
  const double m = 2 * 256.0;
  CHECK(detail::layer_forward_gemm_seconds(md, 256, s, 312e12, g, false, 256) -
            detail::layer_forward_gemm_seconds(no_shared, 256, s, 312e12, g, false, 256) ==
        Approx(0.75 * (gemm_seconds(m, 2.0 * shared, h, 312e12, g) + gemm_seconds(m, h, shared, 312e12, g))));
}

// ---- the search's budget: chunk sets without the whole walk ----

TEST_CASE("peak_chunk_sets_fast equals the schedule walk", "[planner][terms][sets]") {
  for (schedule_kind k : {schedule_kind::interleaved, schedule_kind::one_f_one_b, schedule_kind::gpipe})
    for (std::size_t p = 2; p <= 8; ++p)
      for (std::size_t v = 1; v <= 4; ++v)
        for (std::size_t m = p; m <= 4 * p + 3; ++m) {
          if (k == schedule_kind::interleaved && m % p != 0) continue;
          for (std::size_t st : {std::size_t{0}, p / 2, p - 1})
            for (std::size_t c = 0; c < (k == schedule_kind::interleaved ? v : 1); ++c) {
              INFO("kind " << schedule_name(k) << " p " << p << " v " << v << " m " << m << " stage " << st << " chunk " << c);
              REQUIRE(detail::peak_chunk_sets_fast(k, p, m, v, st, c) == weft::peak_chunk_sets(k, p, m, v, st, c));
            }
        }
}

TEST_CASE("uneven stages chosen by the search where pp does not divide the depth", "[planner][terms][stages]") {
  const model_desc md = gpt_desc(70, 8192, 64, 51200, 2048);
  const cluster c = presets::a100_80gb(12);
  search_options o{};
  o.fixed_tp = 8, o.fixed_pp = 12, o.uneven_stages = true;
  const auto r = search<1>(md, {96, 2048}, c, o);
  REQUIRE(r.found());
  // ⌈70/12⌉ = 6 on each of the 10 middle stages, 10 left: 5 on the first, 5 on the last
  CHECK(r.best().strategy.first_stage_layers == 5);
  CHECK(r.best().strategy.last_stage_layers == 5);
  // 71 blocks: 6 × 10, 11 left: 6 first, 5 last (the head's stage the fewer)
  const auto r71 = search<1>(gpt_desc(71, 8192, 64, 51200, 2048), {96, 2048}, c, o);
  REQUIRE(r71.found());
  CHECK(r71.best().strategy.first_stage_layers == 6);
  CHECK(r71.best().strategy.last_stage_layers == 5);
  // an even split stays even
  o.fixed_pp = 10;
  const auto even = search<1>(md, {100, 2048}, presets::a100_80gb(10), o);
  REQUIRE(even.found());
  CHECK_FALSE(even.best().strategy.uneven());
}

#pragma once
// ---- a cluster as a value: what the cost model needs to know about the machines ----
// Every number is per GPU (or per CPU core for the shared-memory preset) unless it says
// per node. Presets carry datasheet numbers (docs/planner.md cites them); `cpu_mpi` is
// calibrated from this repository's benchmarks (docs/benchmarks.md, bench_parallel_step).
// A cluster may be two islands (two data centres, two clusters) joined by a slower link:
// mesh axes whose groups span islands use that link.
#include <concepts>
#include <cstddef>
#include <string_view>

namespace weft::planner {

/// Failures per node and day when nothing better is known: Meta's Llama 3 405B pre-training saw
/// 419 unexpected interruptions in a 54-day snapshot on 16,384 H100 GPUs, 2,048 nodes of 8
/// (Llama 3 Herd of Models, 2024, section 3.3.4 and Table 5): 419 / (54 · 2,048) = 0.00379 per
/// node-day. Planned interruptions (47 in the same period) are not counted.
inline constexpr double llama3_failures_per_node_day = 419.0 / (54.0 * 2048.0);

/// Hardware and prices of a cluster (a constexpr value; the search and the explorer share it).
struct cluster {
  std::string_view name = "custom";
  std::size_t gpus_per_node = 8;
  std::size_t nodes = 1;
  double memory_bytes = 80e9;            ///< device memory per GPU
  double usable_memory_fraction = 0.92;  ///< left for the plan after the runtime, workspace, fragmentation
  double peak_flops_16 = 312e12;         ///< dense bf16/f16 FLOP/s per GPU (tensor cores, no sparsity)
  double peak_flops_32 = 19.5e12;        ///< dense f32 FLOP/s per GPU (no TF32)
  double peak_flops_8 = 0;               ///< dense FP8 FLOP/s per GPU (0: no FP8 tensor cores; job_options::fp8 then runs at peak_flops_16)
  double memory_bandwidth = 2.0e12;      ///< bytes/s of device memory
  double intra_bandwidth = 300e9;        ///< bytes/s one GPU sends inside a node (NVLink, one direction)
  double intra_latency = 5e-6;           ///< seconds per message step inside a node
  double inter_bandwidth = 25e9;         ///< bytes/s one GPU sends to other nodes (its share of the NICs)
  double inter_latency = 10e-6;          ///< seconds per message step between nodes
  std::size_t islands = 1;               ///< groups of nodes joined by a slower link (1: one cluster)
  double island_bandwidth = 1.25e9;      ///< bytes/s one GPU sends to another island
  double island_latency = 1e-3;          ///< seconds per message step between islands
  double price_per_gpu_hour = 2.0;       ///< USD
  double failures_per_node_day = llama3_failures_per_node_day;  ///< failures that stop the job, per node and day (Llama 3's)
  double checkpoint_bandwidth = 5e9;     ///< bytes/s one node writes a checkpoint at
  double restart_seconds = 600;          ///< to detect a failure, restart and reload
  double step_overhead_seconds = 0.005;  ///< per step: data loading, launches, logging
  bool cpu = false;                      ///< cores, not GPUs: f32, no tensor cores
  std::size_t shared_cores = 0;          ///< non-zero: all ranks time-share this many cores (oversubscribed MPI)

  constexpr std::size_t gpus() const noexcept { return gpus_per_node * nodes; }
  constexpr std::size_t nodes_per_island() const noexcept { return islands <= 1 ? nodes : (nodes + islands - 1) / islands; }
};

namespace presets {

/// DGX A100 80GB: 8 A100-SXM4-80GB, NVSwitch (600 GB/s bidirectional per GPU), 8×200 Gb/s HDR InfiniBand.
constexpr cluster a100_80gb(std::size_t nodes = 1) noexcept {
  cluster c{};
  c.name = "a100-80gb";
  c.nodes = nodes;
  c.memory_bytes = 85.9e9;  // 80 GiB (nvidia-smi: 81920 MiB); "80GB" is binary gigabytes
  c.peak_flops_16 = 312e12;
  c.peak_flops_32 = 19.5e12;
  c.memory_bandwidth = 2.039e12;
  c.intra_bandwidth = 300e9;
  c.inter_bandwidth = 25e9;  // 200 Gb/s per GPU
  c.price_per_gpu_hour = 1.80;
  return c;
}

/// DGX H100: 8 H100-SXM5-80GB, NVLink 4 (900 GB/s bidirectional), 8×400 Gb/s NDR InfiniBand.
constexpr cluster h100_sxm(std::size_t nodes = 1) noexcept {
  cluster c{};
  c.name = "h100-sxm";
  c.nodes = nodes;
  c.memory_bytes = 85.5e9;  // nvidia-smi: 81559 MiB (80 GiB less what the driver keeps)
  c.peak_flops_16 = 989e12;
  c.peak_flops_32 = 67e12;
  c.peak_flops_8 = 1979e12;  // FP8 dense (3,958 with sparsity)
  c.memory_bandwidth = 3.35e12;
  c.intra_bandwidth = 450e9;
  c.inter_bandwidth = 50e9;  // 400 Gb/s per GPU
  c.price_per_gpu_hour = 3.00;
  return c;
}

/// HGX H200: 8 H200-SXM-141GB, NVLink 4 (900 GB/s bidirectional), 8×400 Gb/s NDR InfiniBand.
constexpr cluster h200(std::size_t nodes = 1) noexcept {
  cluster c = h100_sxm(nodes);
  c.name = "h200";
  c.memory_bytes = 141e9;
  c.memory_bandwidth = 4.8e12;
  c.price_per_gpu_hour = 3.80;
  return c;
}

/// HGX H800: the export variant of the H100 SXM — the same compute and HBM3, NVLink cut to 400 GB/s
/// bidirectional (200 GB/s a direction; DeepSeek-V3's report measures about 160 GB/s of it), and
/// 8×400 Gb/s InfiniBand (DeepSeek-V3's cluster: 50 GB/s a GPU).
constexpr cluster h800(std::size_t nodes = 1) noexcept {
  cluster c = h100_sxm(nodes);
  c.name = "h800";
  c.intra_bandwidth = 200e9;
  c.price_per_gpu_hour = 2.00;  // assumption (rental price)
  return c;
}

/// HGX B200: 8 B200 (180 GB HBM3e, 8 TB/s; 2.25 PFLOP/s dense bf16, 4.5 dense FP8 at 1,000 W),
/// NVLink 5 (1.8 TB/s bidirectional: 900 GB/s a direction), 8×400 Gb/s ConnectX-7.
constexpr cluster b200(std::size_t nodes = 1) noexcept {
  cluster c{};
  c.name = "b200";
  c.nodes = nodes;
  c.memory_bytes = 180e9;
  c.peak_flops_16 = 2250e12;
  c.peak_flops_32 = 80e12;
  c.peak_flops_8 = 4500e12;
  c.memory_bandwidth = 8.0e12;
  c.intra_bandwidth = 900e9;
  c.inter_bandwidth = 50e9;  // 400 Gb/s per GPU
  c.price_per_gpu_hour = 5.00;  // assumption
  return c;
}

/// This kind of machine: MPI ranks on the cores of one host, messages through shared memory
/// (Open MPI vader). One "GPU" is one core running one single-threaded rank. Calibrated from
/// bench_parallel_step (docs/planner_validation.md): peak and bandwidths are effective figures.
/// `effective_cores`: cores the ranks really get; when bench_parallel_step was measured, two
/// ranks on this 2-core machine (shared with other work) took as long as one, so 1.
constexpr cluster cpu_mpi(std::size_t cores = 2, std::size_t effective_cores = 1) noexcept {
  cluster c{};
  c.name = "cpu-mpi";
  c.gpus_per_node = cores;
  c.nodes = 1;
  c.memory_bytes = 8e9;
  c.peak_flops_16 = 30e9;  // bf16 runs through f32 units on a CPU
  c.peak_flops_32 = 30e9;  // one core, OpenBLAS sgemm, effective
  c.memory_bandwidth = 10e9;
  c.intra_bandwidth = 2e9;  // shared-memory copies through MPI
  c.intra_latency = 20e-6;
  c.inter_bandwidth = 2e9;
  c.inter_latency = 20e-6;
  c.price_per_gpu_hour = 0.05;
  c.failures_per_node_day = 0.001;
  c.step_overhead_seconds = 0.002;
  c.cpu = true;
  c.shared_cores = effective_cores;
  return c;
}

}  // namespace presets

/// The preset called `name` ("a100-80gb", "h100-sxm", "h200", "h800", "b200", "cpu-mpi") on `nodes` nodes;
/// `found` is false for an unknown name.
struct preset_lookup {
  cluster value{};
  bool found = false;
};
constexpr preset_lookup find_preset(std::string_view name, std::size_t nodes = 1) noexcept {
  if (name == "a100-80gb" || name == "a100") return {presets::a100_80gb(nodes), true};
  if (name == "h100-sxm" || name == "h100") return {presets::h100_sxm(nodes), true};
  if (name == "h200") return {presets::h200(nodes), true};
  if (name == "h800") return {presets::h800(nodes), true};
  if (name == "b200") return {presets::b200(nodes), true};
  if (name == "cpu-mpi" || name == "cpu") {
    cluster c = presets::cpu_mpi();
    c.nodes = nodes;
    return {c, true};
  }
  return {};
}

/// A cluster as a type, for auto_strategy<Model, Batch, Cluster>: any type with
/// `static constexpr cluster value`. `a100_nodes<16>` etc. name the presets.
template <class C>
concept cluster_type = requires {
  { C::value.gpus() } -> std::convertible_to<std::size_t>;
};

template <std::size_t Nodes> struct a100_nodes { static constexpr cluster value = presets::a100_80gb(Nodes); };
template <std::size_t Nodes> struct h100_nodes { static constexpr cluster value = presets::h100_sxm(Nodes); };
template <std::size_t Nodes> struct h200_nodes { static constexpr cluster value = presets::h200(Nodes); };
template <std::size_t Nodes> struct h800_nodes { static constexpr cluster value = presets::h800(Nodes); };
template <std::size_t Nodes> struct b200_nodes { static constexpr cluster value = presets::b200(Nodes); };
template <std::size_t Cores> struct cpu_cores { static constexpr cluster value = presets::cpu_mpi(Cores); };

}  // namespace weft::planner

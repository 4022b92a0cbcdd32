#pragma once
// ---- distributed checkpoints: logical tensors written in slices, read back under any strategy ----
// save_checkpoint(step, world, root, state) writes the checkpoint of a distributed_step — any
// mix of data (ZeRO 0-3), tensor, sequence and pipeline parallelism, or a world of one — as the
// files a single process writes (checkpoint.hpp): model.safetensors with Hugging Face names and
// layouts, optimizer.safetensors with the AdamW moments "m.<name>", "v.<name>", config.json,
// plus manifest.json. Every tensor is *logical*: the single-process parameter, whole.
//
// No rank gathers the model. Every rank computes the same file layout from the single-process
// plan (Plan::parameters()); rank 0 writes the headers and sizes the files; then each rank
// pwrite()s the elements it owns at their places, coalesced into contiguous runs:
//   element e of a rank's local parameter block (a tp shard of a pipeline stage's block) sits at
//   shard_indices(whole, tp, tp_rank)[e - offset] of the single-process parameter, transposed for
//   GPT-2's Conv1D weights in model.safetensors;
//   it is written by the data-parallel rank whose shard [shard_begin, shard_begin + shard_size)
//   holds it (the ZeRO shards; with ZeRO-0 the same split spreads the writing), and only where the
//   local step counts it in the global norm (norm_skipped(): a replicated parameter on tp ranks
//   other than 0, the last pipeline stage's copy of a tied embedding), so each element once;
//   the moments come from the shard vectors of ZeRO >= 1, the parameters from the master shard
//   under ZeRO-3.
// Mixed precision (precision<bf16, f32>): the files hold the f32 master weights and moments, as
// a single process saves them (checkpoint.hpp): the master of the local step's arena under
// ZeRO-0, else data_parallel_step's master shard. Loading restores the master and rewrites the
// bf16 parameters from it (data_parallel_step::params_from_master: each rank rounds its shard,
// then they are all-gathered), so a mixed run resumes as it would have continued.
// Under expert parallelism (expert_parallel<"ep">, plan::ep > 1) a rank holds E/ep experts of
// every moe_mlp; the files are still the whole model's (Plan::model_type as one process writes
// it: the same signature, structure, config.json and tensors, all E experts), so that they load
// under any other strategy, ep = 1 or another ep. Expert rank r's expert tensors
// (is_expert_parameter) are the block [r·E/ep, (r+1)·E/ep) of the logical tensors' leading axis;
// the dense parameters, the same on every rank of the expert group, are written by expert rank 0
// only (the wrapper's norm_skipped() holds them on the others) and read by every rank.
// Then every file's header and tensors are checksummed (FNV-1a 64, tensor i by rank i mod N, in
// parallel) into manifest.json, which rank 0 writes last.
//
// Atomic (checkpoint_dirs.hpp, shared with the single-process save into a root): a save writes
// into root/.step-<n>.tmp/, fsyncs every file, writes the manifest, renames the directory to
// root/step-<n>/ and then replaces root/latest (a one-line file naming it) by rename. A crash at
// any point leaves the last good checkpoint and `latest` as they were. keep_last rotates: after a
// save only the newest N step directories stay.
//
// load_checkpoint(step, world, path) reads root's `latest`, a step directory, or (without
// `latest`) root's newest step directory with a manifest. Each rank reads (pread) only the elements it needs, so a
// checkpoint saved under dp2 x tp2 x pp2 on 8 ranks loads under tp2 on 4, ZeRO-3, or one
// process. Everything is checked first — model signature and structure, every tensor's presence,
// shape and dtype, file sizes, checksums — into buffers; the step is changed only when every rank
// has succeeded. Any problem is one checkpoint_error line, the same on every rank.
#include "weft/comm/communicator.hpp"         // communicator, reduce_op
#include "weft/parallel/tensor_parallel.hpp"  // shard_indices
#include "weft/io/checkpoint.hpp"          // checkpoint_state, the checkpoint engine (detail::ckpt_*)
#include "weft/io/checkpoint_dirs.hpp"     // checkpoint_options, ckpt_save_step_dir, ckpt_resolve
#include "weft/io/checkpoint_error.hpp"    // checkpoint_error
#include "weft/exec/distributed_step.hpp"    // distributed_step
#include "weft/exec/expert_parallel_local.hpp"  // expert_parallel_local (the local step of ep plans)
#include "weft/parallel/plan.hpp"          // plan, precision (the files' single-process plan)
#include "weft/io/safetensors.hpp"         // safetensors_writer, safetensors_file

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <csignal>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <span>
#include <sstream>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

namespace weft {

namespace detail {

// The single-process plan whose files a save of `Plan` writes: `Plan` itself, or under expert
// parallelism the whole model (model_type, all E experts) in one process at the same precision.
template <class Plan>
struct ckpt_logical_plan {
  using type = Plan;
};
template <class Plan>
  requires(Plan::ep > 1)
struct ckpt_logical_plan<Plan> {
  using type = plan<typename Plan::model_type, typename Plan::batch_type,
                    precision<typename Plan::value_type, typename Plan::master_type>>;
};
template <class Plan>
using ckpt_logical_plan_t = typename ckpt_logical_plan<Plan>::type;

// What this rank holds of a distributed step: its local block (a tp shard of a pipeline stage's
// block), which of its elements it writes (its dp shard, minus norm_skipped()), and where the
// moments and, under ZeRO-3, the master parameters live.
template <class Plan, class Comm>
ckpt_local<typename Plan::master_type> ckpt_local_of(distributed_step<Plan, Comm>& ds) {
  using M = typename Plan::master_type;  // the files' type (the value type unless mixed precision)
  auto& dp = ds.inner();
  auto& loc = dp.local();
  using dp_type = std::remove_reference_t<decltype(dp)>;
  constexpr bool mixed = dp_type::mixed_precision;
  constexpr std::size_t zero = dp_type::zero_stage;
  ckpt_local<M> v;
  v.infos = loc.parameter_infos();
  if constexpr (requires { loc.tp_rank(); }) {
    v.tp = Plan::tp;
    v.tp_rank = loc.tp_rank();
  }
  if constexpr (requires { loc.expert_rank(); }) {  // expert_parallel_local: its slice of the experts
    v.ep = loc.expert_size();
    v.ep_rank = loc.expert_rank();
  }
  // ZeRO-3 writes and reads the master shard only (the working parameters are gathered from it;
  // layer by layer the arena does not even hold the block stack).
  if constexpr (!mixed && zero < 3) v.params = loc.params();
  else if constexpr (mixed && zero == 0) v.params = loc.master();  // the local step's f32 master
  v.size = detail::parameter_block_size_of(loc);
  v.counted.assign(v.size, 1);
  if constexpr (requires { loc.norm_skipped(); })
    for (const auto& r : loc.norm_skipped())
      std::fill_n(v.counted.begin() + static_cast<std::ptrdiff_t>(r.offset), r.size, char{0});
  v.shard_begin = dp.shard_begin();
  v.shard_end = dp.shard_begin() + dp.shard_size();
  if constexpr (zero >= 1) {
    v.m = dp.moments_m();
    v.v = dp.moments_v();
    v.moment_base = v.shard_begin;
  } else {
    v.m = loc.adam_m();
    v.v = loc.adam_v();
  }
  if constexpr (zero == 3 || (mixed && zero >= 1)) v.master = dp.master_shard();
  return v;
}

}  // namespace detail

/// Saves the checkpoint of `step` (a distributed_step over `world`, any strategy) into
/// root/step-<n>/ and points root/latest at it; collective over `world`. Each rank writes only its
/// own slices of the logical (single-process) tensors; see the top of this file. Returns the step
/// directory. Any failure is a checkpoint_error on every rank; the previous checkpoint stays.
template <class Plan, class Comm>
std::filesystem::path save_checkpoint(distributed_step<Plan, Comm>& step, Comm& world, const std::filesystem::path& root,
                                      checkpoint_state cs = {}, const checkpoint_options& opt = {}) {
  static_assert(detail::ckpt_float_v<typename Plan::master_type>,
                "weft::save_checkpoint: checkpoints hold f32 or f64 weights: an f16 or bf16 plan needs f32 master weights. Use precision<float>, precision<double> or precision<bf16, f32>.");
  using logical = detail::ckpt_logical_plan_t<Plan>;  // the files' plan: the whole model in one process
  namespace fs = std::filesystem;
  const std::uint64_t n = step.inner().step_count();
  // Rank 0's position, everywhere: the headers must be the same bytes on every rank.
  std::int64_t pos[2] = {static_cast<std::int64_t>(cs.sampler.seed), static_cast<std::int64_t>(cs.sampler.step)};
  world.broadcast(std::span<std::int64_t>(pos, 2), 0);
  cs.sampler = {static_cast<std::uint64_t>(pos[0]), static_cast<std::uint64_t>(pos[1])};
  const auto& scaler = step.inner().loss_scale_state();  // the same on every rank (a collective verdict)
  cs.loss_scale = scaler.active() ? scaler.scale() : 0.0;
  cs.loss_scale_good_steps = scaler.good_steps();
  return detail::ckpt_save_step_dir(world, root, n, opt, [&](const fs::path& tmp) {
    detail::ckpt_write_files<logical>(world, detail::ckpt_local_of(step), tmp, n, cs,
                                      detail::ckpt_strategy_text<Plan>(step.dp_size(), static_cast<std::size_t>(world.size())));
  });
}

/// Restores `step` (any strategy, any world size) from the checkpoint at `path` — a step
/// directory, or a root whose `latest` names one; collective over `world`. Each rank reads the
/// elements it needs. Returns the saved position. Everything is checked before `step` changes:
/// on a checkpoint_error (the same line on every rank) `step` is as it was.
template <class Plan, class Comm>
checkpoint_state load_checkpoint(distributed_step<Plan, Comm>& step, Comm& world, const std::filesystem::path& path) {
  using T = typename Plan::master_type;  // the master weights and moments (the value type unless mixed precision)
  static_assert(detail::ckpt_float_v<T>,
                "weft::load_checkpoint: checkpoints hold f32 or f64 weights: an f16 or bf16 plan needs f32 master weights. Use precision<float>, precision<double> or precision<bf16, f32>.");
  using logical = detail::ckpt_logical_plan_t<Plan>;  // the files' plan: the whole model in one process
  auto local = detail::ckpt_local_of(step);
  detail::ckpt_staged<T> staged;
  std::filesystem::path dir;
  detail::ckpt_manifest man;
  std::array<detail::ckpt_file, 2> files;
  checkpoint_state loaded;  // the loss scale of an f16 run

  // 1. Every rank: which checkpoint, its manifest, the files' headers against this model.
  detail::ckpt_agree(world, detail::ckpt_try([&] {
    dir = detail::ckpt_resolve(path);
    if (!std::filesystem::exists(dir / "manifest.json"))
      throw checkpoint_error("weft::load_checkpoint: " + dir.string() + " has no manifest.json (an unfinished save?)");
    man = detail::ckpt_parse_manifest(dir / "manifest.json");
    files = detail::ckpt_check_files<logical>(dir, man);
    detail::ckpt_read_loss_scale(safetensors_file::open(dir / "optimizer.safetensors").metadata(), loaded,
                                 (dir / "optimizer.safetensors").string());
  }));

  // 2. Checksums in parallel: tensor i by rank i mod N; headers and config.json by rank 0.
  detail::ckpt_agree(world, detail::ckpt_try([&] {
    std::size_t i = 0;
    for (const auto& f : files) {
      const detail::ckpt_manifest_file* mf = nullptr;
      for (const auto& x : man.files)
        if (x.name == f.name) mf = &x;
      detail::ckpt_fd in(dir / f.name, O_RDONLY);
      if (world.rank() == 0) {
        std::string head(f.head.size(), '\0');
        in.pread_all(head.data(), head.size(), 0);
        if (detail::hex64(detail::fnv1a64(head.data(), head.size())) != mf->head_digest)
          throw checkpoint_error("weft::load_checkpoint: " + in.path + ": the header's checksum does not match the manifest (corrupted file)");
      }
      for (const auto& t : f.tensors) {
        if (static_cast<int>(i++ % static_cast<std::size_t>(world.size())) != world.rank()) continue;
        std::string want;
        for (const auto& x : mf->tensors)
          if (x.name == t.name) want = x.digest;
        if (detail::hex64(detail::ckpt_digest(in, t.begin, t.end)) != want)
          throw checkpoint_error("weft::load_checkpoint: " + in.path + ": tensor '" + t.name +
                                 "' does not match its checksum in the manifest (corrupted file)");
      }
    }
    if (world.rank() == 0) {
      const std::string config = detail::ckpt_read_small(dir / "config.json");
      if (detail::hex64(detail::fnv1a64(config.data(), config.size())) != man.config_digest)
        throw checkpoint_error("weft::load_checkpoint: " + (dir / "config.json").string() +
                               " does not match its checksum in the manifest (corrupted file)");
    }
  }));

  // 3. Every rank: its elements, into buffers.
  detail::ckpt_agree(world, detail::ckpt_try([&] {
    const auto whole = logical::parameters();
    const auto index = detail::ckpt_whole_index(whole);
    staged.params.resize(local.size);
    staged.m.resize(local.m.size());
    staged.v.resize(local.v.size());
    std::vector<std::pair<std::uint64_t, T*>> model_items, opt_items;
    const std::size_t mb = local.moment_base, me = local.moment_base + local.m.size();
    for (const param_info& p : local.infos) {
      const std::size_t w = index.at(p.name);
      const auto idx = detail::ckpt_shard_map(whole[w], p, local.tp, local.tp_rank, local.ep, local.ep_rank);
      const auto& tp_ = files[0].tensors[detail::ckpt_tensor_index(detail::ckpt_kind::param, w)];
      const auto& tm = files[1].tensors[detail::ckpt_tensor_index(detail::ckpt_kind::m, w)];
      const auto& tv = files[1].tensors[detail::ckpt_tensor_index(detail::ckpt_kind::v, w)];
      for (std::size_t x = p.offset; x < p.offset + p.size; ++x) {
        const std::size_t logical = idx[x - p.offset];
        model_items.emplace_back(tp_.at(logical), staged.params.data() + x);
        if (x >= mb && x < me) {
          opt_items.emplace_back(tm.at(logical), staged.m.data() + (x - mb));
          opt_items.emplace_back(tv.at(logical), staged.v.data() + (x - mb));
        }
      }
    }
    // One dtype per file (weft writes one); mixed files would need per-tensor element sizes.
    for (std::size_t fi = 0; fi < files.size(); ++fi)
      for (const auto& t : files[fi].tensors)
        if (t.elem != files[fi].tensors.front().elem)
          throw checkpoint_error("weft::load_checkpoint: " + (dir / files[fi].name).string() + ": tensor '" + t.name +
                                 "' has another dtype than the file's other tensors");
    const detail::ckpt_fd model_in(dir / files[0].name, O_RDONLY), opt_in(dir / files[1].name, O_RDONLY);
    detail::ckpt_read_runs(model_in, model_items, files[0].tensors.front().elem);
    detail::ckpt_read_runs(opt_in, opt_items, files[1].tensors.front().elem);
  }));

  // 4. Everyone succeeded: commit. (Mixed precision: the master, then the bf16 parameters from it.)
  if (!local.params.empty()) std::copy(staged.params.begin(), staged.params.end(), local.params.begin());
  if (!local.master.empty())
    std::copy_n(staged.params.begin() + static_cast<std::ptrdiff_t>(local.shard_begin), local.master.size(),
                local.master.begin());
  std::copy(staged.m.begin(), staged.m.end(), local.m.begin());
  std::copy(staged.v.begin(), staged.v.end(), local.v.begin());
  if constexpr (std::remove_reference_t<decltype(step.inner())>::mixed_precision) step.inner().params_from_master();
  else if constexpr (std::remove_reference_t<decltype(step.inner())>::zero_stage == 3) step.inner().gather_parameters();
  step.inner().local().set_step_count(static_cast<std::size_t>(man.step));
  if (loaded.loss_scale > 0) step.inner().restore_loss_scale(loaded.loss_scale, loaded.loss_scale_good_steps);
  checkpoint_state cs = loaded;
  cs.sampler = man.sampler;
  return cs;
}

}  // namespace weft

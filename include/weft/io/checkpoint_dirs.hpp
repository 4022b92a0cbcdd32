#pragma once
// ---- checkpoints under a root: step directories, `latest`, the atomic commit, rotation ----
// A save into a root (save_checkpoint(step, world, root, ...): distributed_checkpoint.hpp for a
// distributed_step, checkpoint.hpp for one process's training_step in a world of one) writes
// root/.step-<n>.tmp/, fsyncs every file, writes the manifest, renames the directory to
// root/step-<n>/ and then replaces root/latest (a one-line file naming it) by rename. A crash at
// any point leaves the last good checkpoint and `latest` as they were. Saving the same step again
// moves the old step-<n>/ aside to .step-<n>.old first; a crash between the two renames leaves
// `latest` naming a missing directory, and loading takes the aside copy. keep_last rotates: after
// a save only the newest N step directories stay (each renamed away before it is removed).
// Loading resolves a root through `latest` (ckpt_resolve): a step directory is only ever loaded
// with its manifest, checked against every file.
#include "weft/comm/communicator.hpp"    // communicator
#include "weft/io/checkpoint_error.hpp"  // checkpoint_error
#include "weft/io/checkpoint_files.hpp"  // ckpt_agree, ckpt_try, ckpt_read_small, ckpt_write_small, ckpt_kill_point

#include <cerrno>
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

namespace weft {

/// Where and how many checkpoints save_checkpoint keeps.
struct checkpoint_options {
  /// Step directories kept under the root after a successful save, newest first (0: all).
  std::size_t keep_last = 0;
};

namespace detail {

inline std::string step_dir_name(std::uint64_t step) {
  char s[32];
  std::snprintf(s, sizeof s, "step-%09llu", static_cast<unsigned long long>(step));
  return s;
}
// The step of "step-<digits>", or -1.
inline long long step_of_dir_name(const std::string& n) {
  if (n.size() <= 5 || n.size() > 5 + 18 || n.compare(0, 5, "step-") != 0) return -1;
  long long v = 0;
  for (std::size_t i = 5; i < n.size(); ++i) {
    if (n[i] < '0' || n[i] > '9') return -1;
    v = v * 10 + (n[i] - '0');
  }
  return v;
}

// The checkpoint directory `path` names, for loading:
//   root/latest's target when `path` has a `latest` (its previous copy root/.step-<n>.old when a
//   save of the same step again was killed between its two renames);
//   else `path` itself if it holds a manifest;
//   else root's newest step directory with a manifest;
//   else, with `plain_ok` (the single-process loader, which names what is missing), `path` itself
//   if it holds a model or optimizer file.
// Anything else is one checkpoint_error line.
inline std::filesystem::path ckpt_resolve(const std::filesystem::path& path, bool plain_ok = false) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_directory(path, ec))
    throw checkpoint_error("weft::load_checkpoint: " + path.string() + " does not exist or is not a directory");
  if (fs::exists(path / "latest", ec)) {
    std::string name = ckpt_read_small(path / "latest");
    while (!name.empty() && (name.back() == '\n' || name.back() == ' ')) name.pop_back();
    if (step_of_dir_name(name) < 0)
      throw checkpoint_error("weft::load_checkpoint: " + (path / "latest").string() + " holds '" + name +
                             "', not the name of a step directory");
    if (fs::exists(path / name / "manifest.json", ec)) return path / name;
    const fs::path aside = path / ("." + name + ".old");
    if (!fs::exists(path / name, ec) && fs::exists(aside / "manifest.json", ec)) return aside;
    throw checkpoint_error("weft::load_checkpoint: " + (path / "latest").string() + " names " + name + ", which " +
                           (fs::exists(path / name, ec) ? "has no manifest.json" : "does not exist") +
                           " (a damaged root: resume from one of its other step-* directories by name)");
  }
  if (fs::exists(path / "manifest.json", ec)) return path;
  long long best = -1;
  for (const auto& e : fs::directory_iterator(path, ec)) {
    const long long s = step_of_dir_name(e.path().filename().string());
    if (s > best && fs::exists(e.path() / "manifest.json", ec)) best = s;
  }
  if (best >= 0) return path / step_dir_name(static_cast<std::uint64_t>(best));
  if (plain_ok && (fs::exists(path / "model.safetensors", ec) || fs::exists(path / "optimizer.safetensors", ec)))
    return path;
  throw checkpoint_error("weft::load_checkpoint: " + path.string() +
                         " holds no checkpoint (no manifest.json, no 'latest', no step-* directory with a manifest)");
}

// Collective over `world`: the atomic save of step `n` into `root`. `write(tmp)` writes the
// checkpoint's files (every rank its part, the manifest last) into the fresh temporary directory
// `tmp`; then rank 0 renames it to root/step-<n>/, replaces root/latest and rotates. Returns the
// step directory. Any failure is a checkpoint_error on every rank; the previous checkpoint stays.
template <communicator Comm, class Write>
std::filesystem::path ckpt_save_step_dir(Comm& world, const std::filesystem::path& root, std::uint64_t n,
                                         const checkpoint_options& opt, Write&& write) {
  namespace fs = std::filesystem;
  const fs::path final_dir = root / step_dir_name(n);
  const fs::path tmp = root / ("." + step_dir_name(n) + ".tmp");

  // 1. Rank 0: a fresh temporary directory.
  ckpt_agree(world, world.rank() != 0 ? std::string() : ckpt_try([&] {
    std::error_code ec;
    fs::create_directories(root, ec);
    if (ec) throw checkpoint_error("weft::save_checkpoint: cannot create " + root.string() + " (" + ec.message() + ")");
    fs::remove_all(tmp, ec);  // a crashed save of the same step
    if (!fs::create_directory(tmp, ec) || ec)
      throw checkpoint_error("weft::save_checkpoint: cannot create " + tmp.string() + " (" +
                             (ec ? ec.message() : std::string("it exists")) + ")");
  }));
  // 2. Every rank: its part of the files, the manifest last.
  write(tmp);
  // 3. Rank 0: the directory renamed into place, then `latest`, then rotation.
  ckpt_agree(world, world.rank() != 0 ? std::string() : ckpt_try([&] {
    std::error_code ec;
    fs::path old;
    if (fs::exists(final_dir, ec)) {  // a save of the same step again: swap, then drop the old one
      old = root / ("." + step_dir_name(n) + ".old");
      fs::remove_all(old, ec);
      if (::rename(final_dir.c_str(), old.c_str()) != 0)
        throw checkpoint_error("weft::save_checkpoint: cannot move " + final_dir.string() + " aside: " + std::strerror(errno));
      ckpt_sync_dir(root);
      ckpt_kill_point(0, "the previous copy of this step moved aside");
    }
    if (::rename(tmp.c_str(), final_dir.c_str()) != 0)
      throw checkpoint_error("weft::save_checkpoint: cannot rename " + tmp.string() + " to " + final_dir.string() + ": " +
                             std::strerror(errno));
    ckpt_sync_dir(root);
    ckpt_kill_point(0, "the step directory renamed into place");
    ckpt_write_small(root, "latest", step_dir_name(n) + "\n");
    ckpt_kill_point(0, "latest replaced");
    if (!old.empty()) fs::remove_all(old, ec);
    // Rotation: the newest keep_last step directories stay; leftovers of crashed saves go. A step
    // directory is renamed to a hidden name before it is removed, so that a crash half-way
    // through the removal never leaves a step-* directory with part of its files.
    std::vector<std::pair<long long, fs::path>> steps;
    std::vector<fs::path> stale;
    for (const auto& e : fs::directory_iterator(root, ec)) {
      const std::string name = e.path().filename().string();
      if (const long long s = step_of_dir_name(name); s >= 0) steps.emplace_back(s, e.path());
      else if (name.size() > 5 && name.compare(0, 6, ".step-") == 0 && e.path() != tmp) stale.push_back(e.path());
    }
    for (const auto& p : stale) fs::remove_all(p, ec);
    if (opt.keep_last > 0 && steps.size() > opt.keep_last) {
      std::sort(steps.begin(), steps.end());
      for (std::size_t k = 0; k + opt.keep_last < steps.size(); ++k) {
        if (steps[k].second == final_dir) continue;
        const fs::path gone = root / ("." + steps[k].second.filename().string() + ".removed");
        fs::remove_all(gone, ec);
        if (::rename(steps[k].second.c_str(), gone.c_str()) != 0) continue;  // stays; the next save tries again
        ckpt_kill_point(0, "an old step directory rotated away");
        fs::remove_all(gone, ec);
      }
    }
  }));
  return final_dir;
}

}  // namespace detail
}  // namespace weft

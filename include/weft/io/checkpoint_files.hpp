#pragma once
// ---- the checkpoint engine's plumbing: checksums, one error agreed by every rank, file I/O ----
// FNV-1a 64 checksums of headers and tensors; ckpt_agree, so that a failure on one rank is the
// same checkpoint_error on all; plain POSIX reads and writes with one-line errors.
#include "weft/comm/communicator.hpp"    // communicator, reduce_op
#include "weft/io/checkpoint_error.hpp"  // checkpoint_error

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <exception>
#include <filesystem>
#include <fstream>
#include <span>
#include <sstream>
#include <string>
#include <system_error>
#include <vector>

namespace weft::detail {

// ---- checksums, text ----

inline constexpr std::uint64_t fnv1a64_basis = 0xcbf29ce484222325ull;
inline std::uint64_t fnv1a64(const void* data, std::size_t n, std::uint64_t h = fnv1a64_basis) {
  const auto* p = static_cast<const unsigned char*>(data);
  for (std::size_t i = 0; i < n; ++i) {
    h ^= p[i];
    h *= 0x100000001b3ull;
  }
  return h;
}
inline std::string hex64(std::uint64_t v) {
  char s[17];
  std::snprintf(s, sizeof s, "%016llx", static_cast<unsigned long long>(v));
  return s;
}
// ---- agreement: every rank learns the first failure, as the same checkpoint_error ----

// Collective. Returns if `error` is empty on every rank; otherwise every rank throws the
// lowest failing rank's message.
template <communicator Comm>
void ckpt_agree(Comm& world, const std::string& error) {
  std::int32_t lowest = error.empty() ? 0 : world.size() - world.rank();
  world.all_reduce(std::span<std::int32_t>(&lowest, 1), reduce_op::max);
  if (lowest == 0) return;
  const int root = world.size() - lowest;
  std::int64_t n = world.rank() == root ? static_cast<std::int64_t>(error.size()) : 0;
  world.broadcast(std::span<std::int64_t>(&n, 1), root);
  std::vector<std::uint8_t> bytes(static_cast<std::size_t>(n));
  if (world.rank() == root) std::memcpy(bytes.data(), error.data(), bytes.size());
  world.broadcast(std::span<std::uint8_t>(bytes), root);
  throw checkpoint_error(std::string(bytes.begin(), bytes.end()));
}
// Runs f; returns the message of what it threw, empty if nothing.
template <class F>
std::string ckpt_try(F&& f) {
  try {
    f();
    return {};
  } catch (const std::exception& e) {
    std::string s = e.what();
    std::replace(s.begin(), s.end(), '\n', ' ');
    return s.empty() ? "weft::checkpoint: unknown error" : s;
  }
}

// ---- plain file I/O with one-line errors ----

struct ckpt_fd {
  int fd = -1;
  std::string path;
  ckpt_fd() = default;
  ckpt_fd(const std::filesystem::path& p, int flags) : fd(::open(p.c_str(), flags | O_CLOEXEC, 0644)), path(p.string()) {
    if (fd < 0) throw checkpoint_error("weft::checkpoint: cannot open " + path + ": " + std::strerror(errno));
  }
  ckpt_fd(const ckpt_fd&) = delete;
  ckpt_fd& operator=(const ckpt_fd&) = delete;
  ~ckpt_fd() {
    if (fd >= 0) ::close(fd);
  }
  void pwrite_all(const void* data, std::size_t n, std::uint64_t at) const {
    const char* p = static_cast<const char*>(data);
    while (n > 0) {
      const ssize_t w = ::pwrite(fd, p, n, static_cast<off_t>(at));
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) throw checkpoint_error("weft::save_checkpoint: cannot write " + path + ": " + std::strerror(errno));
      p += w, n -= static_cast<std::size_t>(w), at += static_cast<std::uint64_t>(w);
    }
  }
  void pread_all(void* data, std::size_t n, std::uint64_t at) const {
    char* p = static_cast<char*>(data);
    while (n > 0) {
      const ssize_t r = ::pread(fd, p, n, static_cast<off_t>(at));
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0)
        throw checkpoint_error("weft::load_checkpoint: " + path + ": cannot read " + std::to_string(n) + " bytes at " +
                               std::to_string(at) + (r == 0 ? " (truncated file?)" : ": " + std::string(std::strerror(errno))));
      p += r, n -= static_cast<std::size_t>(r), at += static_cast<std::uint64_t>(r);
    }
  }
  void sync() const {
    if (::fsync(fd) != 0) throw checkpoint_error("weft::save_checkpoint: cannot fsync " + path + ": " + std::strerror(errno));
  }
};
// Makes a rename inside `dir` durable (best effort: some file systems refuse to fsync a directory).
inline void ckpt_sync_dir(const std::filesystem::path& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd >= 0) {
    (void)::fsync(fd);
    ::close(fd);
  }
}
// Writes `text` to dir/name atomically: name.tmp, fsync, rename, fsync dir.
inline void ckpt_write_small(const std::filesystem::path& dir, const std::string& name, const std::string& text) {
  const std::filesystem::path tmp = dir / (name + ".tmp"), final_path = dir / name;
  {
    ckpt_fd f(tmp, O_WRONLY | O_CREAT | O_TRUNC);
    f.pwrite_all(text.data(), text.size(), 0);
    f.sync();
  }
  if (::rename(tmp.c_str(), final_path.c_str()) != 0)
    throw checkpoint_error("weft::save_checkpoint: cannot rename " + tmp.string() + " to " + final_path.string() + ": " +
                           std::strerror(errno));
  ckpt_sync_dir(dir);
}
inline std::string ckpt_read_small(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) throw checkpoint_error("weft::load_checkpoint: cannot read " + p.string());
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}
// ---- the testing hook of the fault tests: a SIGKILL at a chosen point of a save ----
// WEFT_TEST_CHECKPOINT_KILL="<world rank>:<n>[:<step>]" makes that rank raise SIGKILL at the n-th
// event of a save (of the save at <step> only, when given). The events, in order: on rank 0 the
// headers and config.json written; on every rank each run of its slices written; on rank 0 the
// old manifest removed, each file renamed into place, the manifest written, and in a save into a
// root (checkpoint_dirs.hpp) the previous copy of the same step moved aside, the step directory
// renamed into place, `latest` replaced, each rotated step directory removed. (Other ranks count
// only their runs, so "1:3" is the third run of rank 1.)
inline long ckpt_kill_after(int rank, std::uint64_t step) {
  const char* e = std::getenv("WEFT_TEST_CHECKPOINT_KILL");
  if (!e) return -1;
  int r = -1;
  long n = -1;
  unsigned long long at = 0;
  const int got = std::sscanf(e, "%d:%ld:%llu", &r, &n, &at);
  if (got < 2 || r != rank || (got == 3 && at != step)) return -1;
  return n;
}
// Events left until the kill of the save in progress (-1: none armed).
inline long& ckpt_kill_countdown() {
  static long n = -1;
  return n;
}
// At the start of each save: arms the countdown for this rank and step (or disarms it).
inline void ckpt_kill_arm(int rank, std::uint64_t step) { ckpt_kill_countdown() = ckpt_kill_after(rank, step); }
// One event of the save: the armed one raises SIGKILL, after a line naming it.
inline void ckpt_kill_point(int rank, const char* what) {
  long& n = ckpt_kill_countdown();
  if (n > 0 && --n == 0) {
    std::fprintf(stderr, "weft: WEFT_TEST_CHECKPOINT_KILL: killing rank %d at unix time %lld in the middle of a save (%s)\n",
                 rank, static_cast<long long>(std::time(nullptr)), what);
    std::fflush(stderr);
    std::raise(SIGKILL);
  }
}

// FNV-1a 64 of bytes [begin, end) of an open file, read in pieces.
inline std::uint64_t ckpt_digest(const ckpt_fd& f, std::uint64_t begin, std::uint64_t end) {
  std::vector<char> buf(std::size_t{1} << 20);
  std::uint64_t h = fnv1a64_basis;
  for (std::uint64_t at = begin; at < end;) {
    const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(buf.size(), end - at));
    f.pread_all(buf.data(), n, at);
    h = fnv1a64(buf.data(), n, h);
    at += n;
  }
  return h;
}

}  // namespace weft::detail

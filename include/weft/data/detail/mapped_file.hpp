#pragma once
// ---- mapped_file: a whole file mapped read-only with POSIX mmap ----
// What token_file (data/) and safetensors_file (io/) both stand on: open, fstat, refuse what is
// not a regular file or is shorter than the caller's minimum, mmap(PROT_READ, MAP_SHARED), close
// the descriptor (the mapping keeps the file alive), munmap at the end. MAP_SHARED: the pages are
// the page cache's, shared by every process on the node that maps the same file. No exceptions:
// `map` reports which step failed, and each reader words (and types) its own error.
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <utility>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace weft::detail {

// Why `mapped_file::map` failed: the step, errno where the system said it (else 0), the file
// size for `too_small` (else 0).
enum class map_step { open, stat, not_regular, too_small, mmap };
struct map_failure {
  map_step step;
  int err;
  std::uint64_t size;
};

// Move-only owner of one read-only mapping; empty until `map` succeeds.
class mapped_file {
 public:
  mapped_file() = default;
  mapped_file(const mapped_file&) = delete;
  mapped_file& operator=(const mapped_file&) = delete;
  mapped_file(mapped_file&& o) noexcept { swap(o); }
  mapped_file& operator=(mapped_file&& o) noexcept {
    mapped_file tmp(std::move(o));
    swap(tmp);
    return *this;
  }
  ~mapped_file() { unmap(); }

  // Maps all of `path` (a regular file of at least `min_size` bytes; mmap cannot map 0 bytes,
  // so min_size is at least 1). Nothing on success; on failure, what failed, and *this is empty.
  std::optional<map_failure> map(const std::filesystem::path& path, std::uint64_t min_size = 1) {
    unmap();
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return map_failure{map_step::open, errno, 0};
    struct ::stat st {};
    if (::fstat(fd, &st) != 0) return close_with(fd, map_failure{map_step::stat, errno, 0});
    if (!S_ISREG(st.st_mode)) return close_with(fd, map_failure{map_step::not_regular, 0, 0});
    const auto size = static_cast<std::uint64_t>(st.st_size);
    if (size < min_size || size == 0) return close_with(fd, map_failure{map_step::too_small, 0, size});
    void* p = ::mmap(nullptr, static_cast<std::size_t>(size), PROT_READ, MAP_SHARED, fd, 0);
    const int err = errno;
    ::close(fd);  // the mapping keeps the file alive
    if (p == MAP_FAILED) return map_failure{map_step::mmap, err, 0};
    data_ = p;
    size_ = static_cast<std::size_t>(size);
    return std::nullopt;
  }

  const void* data() const noexcept { return data_; }
  std::size_t size() const noexcept { return size_; }

  void swap(mapped_file& o) noexcept {
    std::swap(data_, o.data_);
    std::swap(size_, o.size_);
  }

 private:
  static map_failure close_with(int fd, map_failure f) noexcept {
    ::close(fd);  // after errno was read into f
    return f;
  }

  void unmap() noexcept {
    if (data_ != nullptr) ::munmap(data_, size_);
    data_ = nullptr;
    size_ = 0;
  }

  void* data_ = nullptr;
  std::size_t size_ = 0;
};

}  // namespace weft::detail

#pragma once
// ---- memory of an execution context: the arena's allocation and the copies across the boundary ----
// An executor allocates its plan's arena once and moves a few things across the host boundary
// (initial parameters, each micro-batch's token ids, parameters for a checkpoint). It does so
// through four hooks found, like the ops, by argument-dependent lookup on the context type:
//   void* context_allocate(const Ctx&, std::size_t bytes)          zero-filled, 256-byte aligned
//   void  context_release(const Ctx&, void* p, std::size_t bytes)
//   void  copy_to_context(const Ctx&, void* dst, const void* src, std::size_t bytes)    host -> ctx
//   void  copy_from_context(const Ctx&, void* dst, const void* src, std::size_t bytes)  ctx -> host
// The host bodies are here (an aligned new touched page by page, memcpy); the CUDA ones are in
// backend/cuda/context.cuh (cudaMalloc + cudaMemset, cudaMemcpyAsync on the context's stream
// and a wait). `context_buffer` owns one allocation.
#include "weft/exec/context.hpp"  // host_context, execution_context

#include <concepts>
#include <cstddef>
#include <cstring>
#include <new>
#include <utility>

namespace weft {

inline void* context_allocate(const host_context&, std::size_t bytes) {
  void* p = ::operator new[](bytes == 0 ? 1 : bytes, std::align_val_t{256});
  std::memset(p, 0, bytes);  // touch every page now, not during the first step
  return p;
}
inline void context_release(const host_context&, void* p, std::size_t) noexcept {
  ::operator delete[](p, std::align_val_t{256});
}
inline void copy_to_context(const host_context&, void* dst, const void* src, std::size_t bytes) {
  if (bytes) std::memcpy(dst, src, bytes);
}
inline void copy_from_context(const host_context&, void* dst, const void* src, std::size_t bytes) {
  if (bytes) std::memcpy(dst, src, bytes);
}

/// Whether a context type has the four memory hooks.
template <class Ctx>
concept context_with_memory = execution_context<Ctx> && requires(const Ctx& c, void* d, const void* s, std::size_t n) {
  { context_allocate(c, n) } -> std::same_as<void*>;
  context_release(c, d, n);
  copy_to_context(c, d, s, n);
  copy_from_context(c, d, s, n);
};

/// One allocation of `bytes` in a context's memory, released with the object (move-only).
template <context_with_memory Ctx>
class context_buffer {
 public:
  context_buffer() = default;
  context_buffer(const Ctx& ctx, std::size_t bytes) : ctx_(ctx), p_(context_allocate(ctx, bytes)), bytes_(bytes) {}
  context_buffer(context_buffer&& o) noexcept
      : ctx_(o.ctx_), p_(std::exchange(o.p_, nullptr)), bytes_(std::exchange(o.bytes_, 0)) {}
  context_buffer& operator=(context_buffer&& o) noexcept {
    if (this != &o) {
      reset();
      ctx_ = o.ctx_;
      p_ = std::exchange(o.p_, nullptr);
      bytes_ = std::exchange(o.bytes_, 0);
    }
    return *this;
  }
  context_buffer(const context_buffer&) = delete;
  context_buffer& operator=(const context_buffer&) = delete;
  ~context_buffer() { reset(); }

  std::byte* get() const { return static_cast<std::byte*>(p_); }
  std::size_t size() const { return bytes_; }

 private:
  void reset() noexcept {
    if (p_) context_release(ctx_, p_, bytes_);
    p_ = nullptr;
  }
  Ctx ctx_{};
  void* p_ = nullptr;
  std::size_t bytes_ = 0;
};

static_assert(context_with_memory<host_context>);

}  // namespace weft

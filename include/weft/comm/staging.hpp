#pragma once
// ---- staging_communicator: collectives on buffers the host cannot read, through host copies ----
// NCCL refuses two ranks on one GPU, yet several processes sharing one device is how a single
// lent GPU (or a laptop's) runs every multi-rank strategy. This communicator wraps a host
// communicator (mpi_communicator, single_world) and a copier: each operation copies its input
// from the buffer's memory to a host staging buffer, runs the wrapped operation there, and
// copies the result back. The buffers it is given are spans over the other memory (device
// memory for a CUDA copier, backend/cuda/staging_copier.cuh): their pointers are never
// dereferenced here, only handed to the copier.
//   * blocking operations stage through two host buffers that grow to the largest message;
//   * non-blocking ones (iall_reduce, isend, irecv) own their staging buffer, kept in the
//     request until it completes; the result reaches the caller's buffer in wait()/test();
//   * split() gives a staging communicator over the wrapped communicator's split, sharing the
//     copier.
// It satisfies `communicator` (comm/communicator.hpp), so every executor runs over it
// unchanged; with `host_copier` (plain copies, counted) it runs here under mpirun and its
// results must equal the wrapped communicator's, which tests/mpi/staging.cpp checks.
#include "weft/comm/communicator.hpp"  // communicator, comm_input, comm_output, reduce_op

#include <algorithm>
#include <concepts>
#include <cstddef>
#include <cstring>
#include <memory>
#include <span>
#include <string_view>
#include <utility>
#include <vector>

namespace weft {

/// Copies between the staged buffers' memory and host memory; both complete before returning.
template <class C>
concept staging_copier = std::copy_constructible<C> && requires(const C& c, void* d, const void* s, std::size_t n) {
  c.to_host(d, s, n);
  c.to_device(d, s, n);
};

/// A copier for buffers that are host memory already: memcpy, with counters (shared by copies
/// of the copier) of the bytes moved each way, so a test can see that staging happened.
class host_copier {
 public:
  struct counters {
    std::size_t to_host_bytes = 0, to_device_bytes = 0, copies = 0;
  };
  host_copier() : counts_(std::make_shared<counters>()) {}
  void to_host(void* dst, const void* src, std::size_t n) const {
    if (n) std::memcpy(dst, src, n);
    counts_->to_host_bytes += n;
    ++counts_->copies;
  }
  void to_device(void* dst, const void* src, std::size_t n) const {
    if (n) std::memcpy(dst, src, n);
    counts_->to_device_bytes += n;
    ++counts_->copies;
  }
  const counters& counts() const { return *counts_; }

 private:
  std::shared_ptr<counters> counts_;
};

/// See the top of the file.
template <communicator Inner, staging_copier Copier>
class staging_communicator {
 public:
  using inner_request = decltype(std::declval<Inner&>().isend(std::span<const float>{}, 0, 0));

  /// A non-blocking operation: the wrapped request and the staging buffer it works on; on
  /// completion a received or reduced result is copied to the caller's buffer.
  class request {
   public:
    request() = default;
    request(inner_request r, std::unique_ptr<std::byte[]> staged, void* dst, std::size_t bytes, const Copier* copier)
        : r_(std::move(r)), staged_(std::move(staged)), dst_(dst), bytes_(bytes), copier_(copier) {}
    request(request&& o) noexcept
        : r_(std::move(o.r_)), staged_(std::move(o.staged_)), dst_(std::exchange(o.dst_, nullptr)), bytes_(o.bytes_),
          copier_(o.copier_) {}
    request& operator=(request&& o) noexcept {
      if (this != &o) {
        wait();
        r_ = std::move(o.r_);
        staged_ = std::move(o.staged_);
        dst_ = std::exchange(o.dst_, nullptr);
        bytes_ = o.bytes_;
        copier_ = o.copier_;
      }
      return *this;
    }
    request(const request&) = delete;
    request& operator=(const request&) = delete;
    ~request() { wait(); }

    void wait() {
      r_.wait();
      finish();
    }
    bool test() {
      if (!r_.test()) return false;
      finish();
      return true;
    }

   private:
    void finish() {
      if (dst_ != nullptr) copier_->to_device(dst_, staged_.get(), bytes_);
      dst_ = nullptr;
      staged_.reset();
    }
    inner_request r_{};
    std::unique_ptr<std::byte[]> staged_;
    void* dst_ = nullptr;  // where the result goes (null: a send, or done)
    std::size_t bytes_ = 0;
    const Copier* copier_ = nullptr;
  };

  staging_communicator(Inner inner, Copier copier = {})
      : inner_(std::move(inner)), copier_(std::make_shared<Copier>(std::move(copier))),
        buffers_(std::make_shared<host_buffers>()) {}

  int rank() const { return inner_.rank(); }
  int size() const { return inner_.size(); }
  Inner& inner() { return inner_; }
  const Copier& copier() const { return *copier_; }
  void barrier() { inner_.barrier(); }
  staging_communicator split(int color, int key) const {
    staging_communicator s(inner_.split(color, key), *copier_);
    s.copier_ = copier_;
    return s;
  }
  [[noreturn]] void abort(int code, std::string_view msg) const { inner_.abort(code, msg); }

  // ---- collectives ----
  template <comm_output R>
  void all_reduce(R&& buffer, reduce_op op) {
    auto b = detail::as_span(buffer);
    auto h = stage_in(b, 0);
    inner_.all_reduce(h, op);
    stage_out(b, h);
  }
  template <comm_input In, comm_output Out>
    requires comm_same_element<In, Out>
  void reduce_scatter(In&& in, Out&& out) {
    staged(in, out, [&](auto hi, auto ho) { inner_.reduce_scatter(hi, ho); });
  }
  template <comm_input In, comm_output Out>
    requires comm_same_element<In, Out>
  void all_gather(In&& in, Out&& out) {
    staged(in, out, [&](auto hi, auto ho) { inner_.all_gather(hi, ho); });
  }
  template <comm_input In, comm_output Out>
    requires comm_same_element<In, Out>
  void reduce_scatter_v(In&& in, Out&& out, std::span<const int> counts) {
    staged(in, out, [&](auto hi, auto ho) { inner_.reduce_scatter_v(hi, ho, counts); });
  }
  template <comm_input In, comm_output Out>
    requires comm_same_element<In, Out>
  void all_gather_v(In&& in, Out&& out, std::span<const int> counts) {
    staged(in, out, [&](auto hi, auto ho) { inner_.all_gather_v(hi, ho, counts); });
  }
  template <comm_input In, comm_output Out>
    requires comm_same_element<In, Out>
  void all_to_all(In&& in, Out&& out) {
    staged(in, out, [&](auto hi, auto ho) { inner_.all_to_all(hi, ho); });
  }
  template <comm_input In, comm_output Out>
    requires comm_same_element<In, Out>
  void all_to_all_v(In&& in, std::span<const int> send_counts, Out&& out, std::span<const int> recv_counts) {
    staged(in, out, [&](auto hi, auto ho) { inner_.all_to_all_v(hi, send_counts, ho, recv_counts); });
  }
  template <comm_output R>
  void broadcast(R&& buffer, int root) {
    auto b = detail::as_span(buffer);
    auto h = rank() == root ? stage_in(b, 0) : scratch<comm_element_t<R>>(b.size(), 0);
    inner_.broadcast(h, root);
    if (rank() != root) stage_out(b, h);
  }

  /// Non-blocking all_reduce in place: the result reaches `buffer` in the request's wait().
  template <comm_output R>
  request iall_reduce(R&& buffer, reduce_op op)
    requires requires(Inner& c, std::span<comm_element_t<R>> s) { c.iall_reduce(s, op); }
  {
    using T = comm_element_t<R>;
    auto b = detail::as_span(buffer);
    auto [owned, h] = own<T>(b);
    auto r = inner_.iall_reduce(h, op);
    return request(std::move(r), std::move(owned), b.data(), b.size_bytes(), copier_.get());
  }

  // ---- point to point ----
  template <comm_input R>
  void send(R&& buffer, int dest, int tag) {
    auto b = detail::as_span(buffer);
    auto h = stage_in(b, 0);
    inner_.send(std::span<const comm_element_t<R>>(h), dest, tag);
  }
  template <comm_output R>
  void recv(R&& buffer, int src, int tag) {
    auto b = detail::as_span(buffer);
    auto h = scratch<comm_element_t<R>>(b.size(), 0);
    inner_.recv(h, src, tag);
    stage_out(b, h);
  }
  template <comm_input R>
  request isend(R&& buffer, int dest, int tag) {
    using T = comm_element_t<R>;
    auto b = detail::as_span(buffer);
    auto [owned, h] = own<T>(b);
    auto r = inner_.isend(std::span<const T>(h), dest, tag);
    return request(std::move(r), std::move(owned), nullptr, 0, copier_.get());
  }
  template <comm_output R>
  request irecv(R&& buffer, int src, int tag) {
    using T = comm_element_t<R>;
    auto b = detail::as_span(buffer);
    std::unique_ptr<std::byte[]> owned(new std::byte[std::max<std::size_t>(b.size_bytes(), 1)]);
    std::span<T> h(reinterpret_cast<T*>(owned.get()), b.size());
    auto r = inner_.irecv(h, src, tag);
    return request(std::move(r), std::move(owned), b.data(), b.size_bytes(), copier_.get());
  }

 private:
  struct host_buffers {
    std::vector<std::max_align_t> slot[2];
  };
  // A host view of n elements of T in staging slot `s` (grown as needed).
  template <class T>
  std::span<T> scratch(std::size_t n, int s) {
    auto& v = buffers_->slot[s];
    const std::size_t units = (n * sizeof(T) + sizeof(std::max_align_t) - 1) / sizeof(std::max_align_t);
    if (v.size() < units) v.resize(units);
    return {reinterpret_cast<T*>(v.data()), n};
  }
  // The buffer's contents copied to staging slot `s`.
  template <class T>
  std::span<std::remove_const_t<T>> stage_in(std::span<T> b, int s) {
    auto h = scratch<std::remove_const_t<T>>(b.size(), s);
    copier_->to_host(h.data(), b.data(), b.size_bytes());
    return h;
  }
  // The staged result copied back into the buffer.
  template <class T>
  void stage_out(std::span<T> b, std::span<T> h) {
    copier_->to_device(b.data(), h.data(), b.size_bytes());
  }
  // An operation from `in` to `out`: the input staged in slot 0, `call(host in, host out)` on
  // slot 1, the result copied back into `out`.
  template <class In, class Out, class Call>
  void staged(In&& in, Out&& out, Call&& call) {
    using T = comm_element_t<Out>;
    auto i = detail::as_span(in);
    auto o = detail::as_span(out);
    auto hi = stage_in(i, 0);
    auto ho = scratch<T>(o.size(), 1);
    call(std::span<const T>(hi), ho);
    stage_out(o, ho);
  }
  // A staging buffer owned by a request, holding a copy of b.
  template <class T, class U>
  std::pair<std::unique_ptr<std::byte[]>, std::span<T>> own(std::span<U> b) {
    std::unique_ptr<std::byte[]> owned(new std::byte[std::max<std::size_t>(b.size_bytes(), 1)]);
    std::span<T> h(reinterpret_cast<T*>(owned.get()), b.size());
    copier_->to_host(h.data(), b.data(), b.size_bytes());
    return {std::move(owned), h};
  }

  Inner inner_;
  std::shared_ptr<Copier> copier_;
  std::shared_ptr<host_buffers> buffers_;
};

}  // namespace weft

#pragma once
// ---- prefetcher: a background thread that keeps a few batches ready ----
// Wraps any batch source (a `sharded_sampler`, a `batch_sampler`, a reader of one's own): one
// std::thread calls `source.next` into a ring of `depth` slots while the training step computes,
// and `next` hands the slots out in the order they were filled. The source is called from that
// one thread only, in order, so the batches are exactly those of calling the source directly.
// An exception thrown by the source is rethrown by the `next` that would have received that
// batch (the batches before it are delivered first). The destructor stops and joins the thread.
// The checkpoint position is that of the last batch handed out (`state()`), not of the batches
// read ahead.
#include "weft/data/batch_source.hpp"  // batch_source

#include <algorithm>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <mutex>
#include <optional>
#include <span>
#include <stdexcept>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

namespace weft {

namespace detail {
// A source with `state()` / `set_state()` (sharded_sampler, batch_sampler).
template <class S>
concept stateful_source = requires(S& s, const S& cs) {
  cs.state();
  s.set_state(cs.state());
};
// The position type of a stateful source; a placeholder for others.
template <class S>
struct source_state {
  using type = int;
};
template <stateful_source S>
struct source_state<S> {
  using type = std::remove_cvref_t<decltype(std::declval<const S&>().state())>;
};
}  // namespace detail

/// Reads batches of `Rows` tokens from `Source` ahead of time on a background thread.
/// `Source` must outlive the prefetcher and must not be used directly while it runs.
template <class Source, std::size_t Rows = Source::tokens_per_batch>
  requires batch_source<Source, Rows>
class prefetcher {
 public:
  static constexpr std::size_t tokens_per_batch = Rows;
  using batch_span = std::span<std::int32_t, Rows>;
  /// The source's position type (`stream_state`, `sampler_state`); int for a source without one.
  using state_type = typename detail::source_state<Source>::type;

  /// Starts the thread, which fills up to `depth` (>= 1) batches ahead.
  explicit prefetcher(Source& source, std::size_t depth = 4) : source_(&source), slots_(std::max<std::size_t>(depth, 1)) {
    for (auto& s : slots_) {
      s.tokens.resize(Rows);
      s.targets.resize(Rows);
    }
    if constexpr (detail::stateful_source<Source>) consumed_state_.emplace(source.state());
    start();
  }
  prefetcher(const prefetcher&) = delete;
  prefetcher& operator=(const prefetcher&) = delete;
  ~prefetcher() { stop(); }

  /// Copies the next batch into `tokens`/`targets` (waiting for it if the thread is behind).
  /// Rethrows the source's exception in place of the batch it failed to produce; after that,
  /// every call throws the same exception.
  void next(batch_span tokens, batch_span targets) {
    std::unique_lock lock(mutex_);
    ready_cv_.wait(lock, [&] { return filled_ > 0 || error_; });
    if (filled_ == 0) std::rethrow_exception(error_);
    slot& s = slots_[head_];
    lock.unlock();
    // The producer never touches a filled slot, so the copy runs without the lock.
    std::copy(s.tokens.begin(), s.tokens.end(), tokens.begin());
    std::copy(s.targets.begin(), s.targets.end(), targets.begin());
    lock.lock();
    if constexpr (detail::stateful_source<Source>) consumed_state_ = s.state_after;
    head_ = (head_ + 1) % slots_.size();
    --filled_;
    ++delivered_;
    lock.unlock();
    free_cv_.notify_one();
  }

  /// Position after the last batch handed out (for a source with `state()`): what a
  /// checkpoint saves. The batches read ahead are not counted.
  state_type state() const
    requires detail::stateful_source<Source>
  {
    std::lock_guard lock(mutex_);
    return *consumed_state_;
  }

  /// Drops the batches read ahead, moves the source to `s` and starts reading ahead again.
  void set_state(const state_type& s)
    requires detail::stateful_source<Source>
  {
    stop();
    source_->set_state(s);
    consumed_state_.emplace(source_->state());
    head_ = tail_ = filled_ = 0;
    error_ = nullptr;
    start();
  }

  /// Batches handed out by `next` so far.
  std::uint64_t delivered() const {
    std::lock_guard lock(mutex_);
    return delivered_;
  }
  /// Number of ring slots.
  std::size_t depth() const noexcept { return slots_.size(); }

 private:
  struct slot {
    std::vector<std::int32_t> tokens, targets;  // (batch, seq) each
    state_type state_after{};                   // the source's position after this batch
  };

  void start() {
    stopping_ = false;
    thread_ = std::thread([this] { run(); });
  }

  void stop() noexcept {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    free_cv_.notify_all();
    if (thread_.joinable()) thread_.join();
  }

  // The producer: fill the slot at tail_ whenever one is free, until stopped or the source throws.
  void run() noexcept {
    for (;;) {
      std::unique_lock lock(mutex_);
      free_cv_.wait(lock, [&] { return stopping_ || filled_ < slots_.size(); });
      if (stopping_) return;
      slot& s = slots_[tail_];
      lock.unlock();
      try {
        source_->next(batch_span(s.tokens.data(), Rows), batch_span(s.targets.data(), Rows));
        if constexpr (detail::stateful_source<Source>) s.state_after = source_->state();
      } catch (...) {
        lock.lock();
        error_ = std::current_exception();
        lock.unlock();
        ready_cv_.notify_all();
        return;  // the batches before the failure are still handed out
      }
      lock.lock();
      tail_ = (tail_ + 1) % slots_.size();
      ++filled_;
      lock.unlock();
      ready_cv_.notify_one();
    }
  }

  Source* source_;
  std::vector<slot> slots_;
  std::size_t head_ = 0, tail_ = 0, filled_ = 0;  // ring: next to hand out, next to fill, ready count
  std::uint64_t delivered_ = 0;
  bool stopping_ = false;
  std::exception_ptr error_;
  std::optional<state_type> consumed_state_;
  mutable std::mutex mutex_;
  std::condition_variable ready_cv_, free_cv_;
  std::thread thread_;
};

}  // namespace weft

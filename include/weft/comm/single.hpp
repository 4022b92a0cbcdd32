#pragma once
// ---- single_world: a world of one process ----
// The communicator of a run without MPI. Every collective over one rank is the identity
// (all_reduce, broadcast and barrier do nothing; reduce_scatter and all_gather copy), so
// the same training code runs unchanged. Messages to self go through an internal mailbox
// with MPI's matching rule (same tag, first posted first matched); a receive that no send
// can ever satisfy ends the program with a message rather than blocking forever.
// Not thread-safe: like an MPI communicator, call it from one thread.
#include "weft/comm/communicator.hpp"  // communicator, comm_scalar, reduce_op, detail::print_error_line

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace weft {
namespace detail {

// A small number per element type, so that a receive can tell a float message from an int one.
template <comm_scalar T>
inline constexpr int scalar_id_v = std::same_as<T, float>          ? 0
                                   : std::same_as<T, double>       ? 1
                                   : std::same_as<T, std::int32_t> ? 2
                                   : std::same_as<T, std::int64_t> ? 3
                                   : std::same_as<T, std::uint8_t> ? 4
                                   : std::same_as<T, bf16>         ? 5
                                                                   : 6;  // f16

// A receive posted with irecv that no send has matched yet.
struct self_receive {
  int tag;
  int type;
  std::size_t count;
  std::byte* data;
  bool done = false;
};

// A sent message that no receive has taken yet.
struct self_message {
  int tag;
  int type;
  std::size_t count;
  std::vector<std::byte> bytes;
};

struct self_mailbox {
  std::deque<self_message> unexpected;                  // sent, not yet received (send order)
  std::deque<std::shared_ptr<self_receive>> posted;     // posted, not yet matched (post order)
};

}  // namespace detail

/// A world of one rank: rank() == 0, size() == 1. Satisfies `communicator`.
class single_world {
 public:
  /// Non-blocking operation handle. A send completes at once; a receive completes when a
  /// matching send arrives. Destroying an incomplete request waits for it (here: ends the
  /// program, since nothing else can ever send).
  class request {
   public:
    request() = default;
    request(request&& other) noexcept : recv_(std::exchange(other.recv_, nullptr)) {}
    request& operator=(request&& other) noexcept {
      if (this != &other) {
        wait();
        recv_ = std::exchange(other.recv_, nullptr);
      }
      return *this;
    }
    request(const request&) = delete;
    request& operator=(const request&) = delete;
    ~request() { wait(); }

    /// Completes the operation; a receive without a matching send ends the program.
    void wait() {
      if (!recv_) return;
      if (!recv_->done)
        single_world{}.abort(1, "weft::single_world::request::wait: the receive (tag " +
                                    std::to_string(recv_->tag) +
                                    ") has no matching send and a world of one can never get one. "
                                    "Send to self before waiting on the receive.");
      recv_.reset();
    }
    /// True once the operation has completed.
    bool test() {
      if (recv_ && recv_->done) recv_.reset();
      return !recv_;
    }

   private:
    friend class single_world;
    explicit request(std::shared_ptr<detail::self_receive> r) : recv_(std::move(r)) {}
    std::shared_ptr<detail::self_receive> recv_;  // null: complete
  };

  single_world() : box_(std::make_shared<detail::self_mailbox>()) {}

  int rank() const { return 0; }
  int size() const { return 1; }

  // ---- collectives: the identity over one rank ----

  /// One contribution: the reduction is the input itself.
  template <comm_output R>
  void all_reduce(R&&, reduce_op) {}

  /// in: (1 * n), out: (n); the sum over one rank is a copy.
  template <comm_input In, comm_output Out>
    requires comm_same_element<In, Out>
  void reduce_scatter(In&& in_buffer, Out&& out_buffer) {
    const auto in = detail::as_span(in_buffer);
    const auto out = detail::as_span(out_buffer);
    require_equal_sizes("reduce_scatter", in.size(), out.size());
    copy(in, out);
  }

  /// in: (n), out: (1 * n).
  template <comm_input In, comm_output Out>
    requires comm_same_element<In, Out>
  void all_gather(In&& in_buffer, Out&& out_buffer) {
    const auto in = detail::as_span(in_buffer);
    const auto out = detail::as_span(out_buffer);
    require_equal_sizes("all_gather", in.size(), out.size());
    copy(in, out);
  }

  /// Non-blocking all_reduce: complete at once.
  template <comm_output R>
  request iall_reduce(R&&, reduce_op) {
    return request{};
  }

  /// Uneven forms: one block, copied.
  template <comm_input In, comm_output Out>
    requires comm_same_element<In, Out>
  void reduce_scatter_v(In&& in_buffer, Out&& out_buffer, std::span<const int> counts) {
    const auto in = detail::as_span(in_buffer);
    const auto out = detail::as_span(out_buffer);
    require_equal_sizes("reduce_scatter_v", in.size(), out.size());
    if (counts.size() != 1 || static_cast<std::size_t>(counts[0]) != in.size())
      abort(1, "weft::single_world::reduce_scatter_v: pass one count equal to the buffer size.");
    copy(in, out);
  }
  template <comm_input In, comm_output Out>
    requires comm_same_element<In, Out>
  void all_gather_v(In&& in_buffer, Out&& out_buffer, std::span<const int> counts) {
    const auto in = detail::as_span(in_buffer);
    const auto out = detail::as_span(out_buffer);
    require_equal_sizes("all_gather_v", in.size(), out.size());
    if (counts.size() != 1 || static_cast<std::size_t>(counts[0]) != in.size())
      abort(1, "weft::single_world::all_gather_v: pass one count equal to the buffer size.");
    copy(in, out);
  }

  /// all_to_all in a world of one: the one block is sent to itself, copied.
  template <comm_input In, comm_output Out>
    requires comm_same_element<In, Out>
  void all_to_all(In&& in_buffer, Out&& out_buffer) {
    const auto in = detail::as_span(in_buffer);
    const auto out = detail::as_span(out_buffer);
    require_equal_sizes("all_to_all", in.size(), out.size());
    copy(in, out);
  }
  /// all_to_all_v in a world of one: send_counts[0] elements copied, which must equal recv_counts[0].
  template <comm_input In, comm_output Out>
    requires comm_same_element<In, Out>
  void all_to_all_v(In&& in_buffer, std::span<const int> send_counts, Out&& out_buffer,
                    std::span<const int> recv_counts) {
    const auto in = detail::as_span(in_buffer);
    const auto out = detail::as_span(out_buffer);
    if (send_counts.size() != 1 || recv_counts.size() != 1 || send_counts[0] != recv_counts[0] || send_counts[0] < 0 ||
        static_cast<std::size_t>(send_counts[0]) > in.size() || static_cast<std::size_t>(send_counts[0]) > out.size())
      abort(1, "weft::single_world::all_to_all_v: pass one send and one equal receive count, within the buffers.");
    copy(in.first(static_cast<std::size_t>(send_counts[0])), out.first(static_cast<std::size_t>(send_counts[0])));
  }

  template <comm_output R>
  void broadcast(R&&, int root) {
    require_self("broadcast", "root", root);
  }

  void barrier() {}

  /// Every color holds the one rank, so each sub-world is this world.
  single_world split(int color, int /*key*/) const {
    if (color < 0)
      abort(1, "weft::single_world::split: color " + std::to_string(color) +
                   " is negative. Pass a color >= 0.");
    return *this;
  }

  // ---- messages to self ----

  template <comm_input R>
  void send(R&& in, int dest, int tag) {
    require_self("send", "dest", dest);
    deliver(detail::as_span(in), tag);
  }

  /// Takes the first unreceived message with this tag; none ends the program (it would
  /// block forever).
  template <comm_output R>
  void recv(R&& out, int src, int tag) {
    require_self("recv", "src", src);
    if (!take(detail::as_span(out), tag))
      abort(1, "weft::single_world::recv: no message with tag " + std::to_string(tag) +
                   " was sent, and a world of one can never get one. Send to self first.");
  }

  template <comm_input R>
  request isend(R&& in, int dest, int tag) {
    require_self("isend", "dest", dest);
    deliver(detail::as_span(in), tag);
    return request{};
  }

  template <comm_output R>
  request irecv(R&& out_buffer, int src, int tag) {
    require_self("irecv", "src", src);
    const auto out = detail::as_span(out_buffer);
    if (take(out, tag)) return request{};
    auto r = std::make_shared<detail::self_receive>(detail::self_receive{
        tag, detail::scalar_id_v<comm_element_t<R>>, out.size(), reinterpret_cast<std::byte*>(out.data())});
    box_->posted.push_back(r);
    return request{std::move(r)};
  }

  /// Prints msg as one line on stderr and exits with `code`.
  [[noreturn]] void abort(int code, std::string_view msg) const {
    detail::print_error_line(0, 1, msg);
    std::exit(code);
  }

 private:
  template <class In, class Out>
  static void copy(std::span<In> in, std::span<Out> out) {
    if (in.data() != out.data()) std::copy_n(in.begin(), out.size(), out.begin());  // sizes checked equal
  }

  void require_equal_sizes(const char* op, std::size_t in, std::size_t out) const {
    if (in != out)
      abort(1, std::string("weft::single_world::") + op + ": input has " + std::to_string(in) +
                   " elements and output " + std::to_string(out) +
                   "; over one rank they must be equal. Size the buffers for size() == 1.");
  }

  void require_self(const char* op, const char* what, int peer) const {
    if (peer != 0)
      abort(1, std::string("weft::single_world::") + op + ": " + what + " is rank " +
                   std::to_string(peer) + ", but a world of one has only rank 0. "
                   "Use rank 0, or launch with mpirun and an mpi_communicator.");
  }

  template <class T>
  void require_match(const char* op, int type, std::size_t count, std::size_t expected, int tag) const {
    if (type != detail::scalar_id_v<T> || count != expected)
      abort(1, std::string("weft::single_world::") + op + ": the message with tag " +
                   std::to_string(tag) + " has " + std::to_string(count) +
                   " elements of another type or count than the " + std::to_string(expected) +
                   " the receive expects. Send and receive the same type and count.");
  }

  // A send: hand the data to the earliest posted receive with this tag, else queue a copy.
  template <class Elem>
  void deliver(std::span<Elem> in, int tag) {
    using T = std::remove_const_t<Elem>;
    auto& posted = box_->posted;
    auto it = std::find_if(posted.begin(), posted.end(), [&](const auto& r) { return r->tag == tag; });
    if (it != posted.end()) {
      auto r = *it;
      posted.erase(it);
      require_match<T>("send", r->type, in.size(), r->count, tag);
      if (!in.empty()) std::memcpy(r->data, in.data(), in.size_bytes());
      r->done = true;
      return;
    }
    const auto* p = reinterpret_cast<const std::byte*>(in.data());
    box_->unexpected.push_back(
        detail::self_message{tag, detail::scalar_id_v<T>, in.size(), std::vector<std::byte>(p, p + in.size_bytes())});
  }

  // A receive: take the earliest queued message with this tag, if any.
  template <class T>
  bool take(std::span<T> out, int tag) {
    auto& queue = box_->unexpected;
    auto it = std::find_if(queue.begin(), queue.end(), [&](const auto& m) { return m.tag == tag; });
    if (it == queue.end()) return false;
    require_match<T>("recv", it->type, it->count, out.size(), tag);
    if (!out.empty()) std::memcpy(out.data(), it->bytes.data(), out.size_bytes());
    queue.erase(it);
    return true;
  }

  std::shared_ptr<detail::self_mailbox> box_;  // shared by copies and splits: they are one world
};

static_assert(communicator<single_world>);

}  // namespace weft

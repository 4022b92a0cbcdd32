#pragma once
// ---- all_to_all_communicator: a communicator that also exchanges blocks between all ranks ----
// Expert parallelism sends each token to the rank that owns its expert and back (all_to_all_v),
// after telling every rank how many rows to expect (all_to_all). Not every communicator has
// these operations (NCCL has no all-to-all call of its own; it is grouped sends and receives),
// so they form their own concept beside `communicator` instead of widening it: single_world and
// mpi_communicator satisfy both.
//   all_to_all(in, out)                          in, out (size * n): block q of in to rank q,
//                                                block p of out from rank p
//   all_to_all_v(in, send_counts, out, recv_counts)   uneven blocks, back to back in rank order;
//                                                buffers may be longer than the counts' sums
#include "weft/comm/communicator.hpp"  // communicator

#include <cstdint>
#include <span>

namespace weft {

namespace detail {
template <class C, class T>
concept exchanges = requires(C& c, std::span<T> out, std::span<const T> in, std::span<const int> counts) {
  c.all_to_all(in, out);
  c.all_to_all_v(in, counts, out, counts);
};
}  // namespace detail

/// A communicator with all_to_all and all_to_all_v on float, double and int32 buffers.
template <class C>
concept all_to_all_communicator = communicator<C> && detail::exchanges<C, float> && detail::exchanges<C, double> &&
                                  detail::exchanges<C, std::int32_t>;

}  // namespace weft

#pragma once
// ---- the micro-batch shape as a type: batch<micro<8>, seq<1024>> ----
#include "weft/core/diagnostics.hpp"  // diag::at_least
#include "weft/model/hyper.hpp"       // detail::find_tag, size_tag

#include <cstddef>

namespace weft {

namespace detail {
struct micro_tag {};
struct seq_tag {};
}  // namespace detail

/// Sequences per micro-batch (per rank).
template <std::size_t N> struct micro : detail::size_tag<detail::micro_tag, N> {};
/// Tokens per sequence.
template <std::size_t N> struct seq : detail::size_tag<detail::seq_tag, N> {};

/// A micro-batch of `micro` sequences of `seq` tokens.
template <class... Tags>
struct batch {
  static constexpr std::size_t sequences = detail::find_tag<detail::micro_tag, 0, Tags...>::value;
  static constexpr std::size_t length = detail::find_tag<detail::seq_tag, 0, Tags...>::value;
  static constexpr std::size_t tokens = sequences * length;
  static constexpr bool both_given = diag::at_least<sequences, 1> && diag::at_least<length, 1>;
  static_assert(both_given, "weft::batch: micro<> or seq<> is missing or zero. Write batch<micro<B>, seq<S>> with B, S >= 1.");
};

}  // namespace weft

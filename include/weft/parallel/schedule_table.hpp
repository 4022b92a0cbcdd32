#pragma once
// ---- the instruction lists of all pipeline stages ----
// `schedule<P, M, V>` holds one instruction list per stage for P stages, M micro-batches
// and V model chunks per stage. With all three known at compile time it is a literal
// type of fixed capacity: a `constexpr` variable, a `static_assert` operand, the input
// of the compile-time proof (schedule_check.hpp). `schedule<>` (all dynamic) holds the
// same lists in vectors, for sizes read at run time (the SVG tool, wide test sweeps).
#include "weft/core/constant.hpp"          // dynamic
#include "weft/core/fixed_string.hpp"      // fixed_string
#include "weft/parallel/instruction.hpp"  // instruction

#include <array>
#include <cstddef>
#include <span>
#include <stdexcept>
#include <vector>

namespace weft {

namespace detail {

// A schedule error found during constant evaluation. Not constexpr on purpose: reaching a
// call stops the compilation, and g++ prints `Message` (the template argument) in the
// error, e.g. "call to non-'constexpr' function ... [with ... Message = "weft::schedule:
// deadlock ..."]". At run time (push() on a schedule<>) it throws std::logic_error.
template <fixed_string Message>
[[noreturn]] inline void schedule_error() {
  throw std::logic_error(Message.c_str());
}

// Longest valid list: per (micro-batch, chunk) one forward, one backward and at most two
// receives and two sends; then reduce_grads and optimizer_step.
constexpr std::size_t list_capacity(std::size_t m, std::size_t v) noexcept { return 6 * m * v + 2; }

template <class T, std::size_t N>
struct array_or_vector {
  using type = std::array<T, N>;
};
template <class T>
struct array_or_vector<T, dynamic> {
  using type = std::vector<T>;
};
// std::array<T, N> for a compile-time N, std::vector<T> for `dynamic`. Constant evaluations
// keep to arrays: nvcc's front end and clang cannot evaluate libstdc++ 12's std::vector.
template <class T, std::size_t N>
using array_or_vector_t = typename array_or_vector<T, N>::type;

// `n` value-initialised elements: an array of N (n == N) or a vector of n.
template <class T, std::size_t N>
constexpr array_or_vector_t<T, N> make_array_or_vector(std::size_t n) {
  if constexpr (N == dynamic) {
    return std::vector<T>(n);
  } else {
    (void)n;
    return std::array<T, N>{};
  }
}

// `fits`: the stage index is in range and its list has room.
constexpr void check_push(bool fits) {
  if (!fits)
    schedule_error<
      "weft::schedule: push() past the end: the stage index is >= P or the stage's list is full. A valid list "
      "holds at most 6*M*V + 2 instructions; check the stage index and remove repeated instructions.">();
}

}  // namespace detail

/// Per-stage instruction lists of a pipeline with `P` stages, `M` micro-batches and `V`
/// model chunks per stage (V = 1 without interleaving).
template <std::size_t P = dynamic, std::size_t M = dynamic, std::size_t V = dynamic>
struct schedule {
  static_assert(P != dynamic && M != dynamic && V != dynamic,
                "weft::schedule: give all of P, M and V, or none. Use schedule<P, M, V> for compile-time "
                "sizes or schedule<> for run-time sizes.");
  static constexpr std::size_t static_stages = P, static_microbatches = M, static_chunks = V;
  /// Most instructions one stage's list can hold.
  static constexpr std::size_t capacity = detail::list_capacity(M, V);

  std::array<std::array<instruction, capacity>, P> ops{};  // (stage, position)
  std::array<std::size_t, P> lengths{};                    // (stage)

  constexpr std::size_t stages() const noexcept { return P; }
  constexpr std::size_t microbatches() const noexcept { return M; }
  constexpr std::size_t chunks() const noexcept { return V; }

  /// The list of `stage`, in execution order.
  constexpr std::span<const instruction> list(std::size_t stage) const noexcept {
    return {ops[stage].data(), lengths[stage]};
  }

  /// Appends `i` to the list of `stage`.
  constexpr void push(std::size_t stage, instruction i) {
    detail::check_push(stage < P && lengths[stage] < capacity);
    ops[stage][lengths[stage]++] = i;
  }
};

/// Run-time sized lists; same interface as the compile-time one.
template <>
struct schedule<dynamic, dynamic, dynamic> {
  static constexpr std::size_t static_stages = dynamic, static_microbatches = dynamic, static_chunks = dynamic;
  static constexpr std::size_t capacity = dynamic;

  std::size_t p = 1, m = 1, v = 1;
  std::vector<std::vector<instruction>> ops;  // (stage, position)

  constexpr schedule(std::size_t stages, std::size_t microbatches, std::size_t chunks)
      : p(stages), m(microbatches), v(chunks), ops(stages) {}

  constexpr std::size_t stages() const noexcept { return p; }
  constexpr std::size_t microbatches() const noexcept { return m; }
  constexpr std::size_t chunks() const noexcept { return v; }
  constexpr std::span<const instruction> list(std::size_t stage) const noexcept { return ops[stage]; }
  constexpr void push(std::size_t stage, instruction i) {
    detail::check_push(stage < p && ops[stage].size() < detail::list_capacity(m, v));
    ops[stage].push_back(i);
  }
};

}  // namespace weft

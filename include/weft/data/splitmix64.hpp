#pragma once
// ---- splitmix64: a tiny, portable, counter-friendly random generator ----
// Written out here (Steele, Lea & Flood 2014; the seeder of xoshiro) rather than taken from
// <random>: std distributions differ between standard libraries, and a checkpoint must
// resume bit-identically on any platform. `mix64` is a bijection of 64-bit integers, so it
// also serves as a keyed hash: a value derived from (seed, step, row) needs no stored state.
#include <bit>
#include <cstdint>

namespace weft {

/// splitmix64: state advances by the golden-ratio increment; the output is `mix64(state)`.
struct splitmix64 {
  static constexpr std::uint64_t increment = 0x9e3779b97f4a7c15ULL;

  std::uint64_t state = 0;

  /// The splitmix64 output function (Stafford's "Mix13" variant of the MurmurHash3 finalizer).
  static constexpr std::uint64_t mix64(std::uint64_t z) noexcept {
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }

  /// Next 64 random bits.
  constexpr std::uint64_t next() noexcept {
    state += increment;
    return mix64(state);
  }

  /// Skips the next `n` outputs (the state is a counter).
  constexpr void discard(std::uint64_t n) noexcept { state += n * increment; }

  /// Uniform integer in [0, bound), bound >= 1, without modulo bias: the smallest all-ones
  /// mask covering bound - 1, with rejection (on average fewer than 2 draws).
  constexpr std::uint64_t below(std::uint64_t bound) noexcept {
    if (bound <= 1) return 0;
    const std::uint64_t mask = ~std::uint64_t{0} >> std::countl_zero(bound - 1);
    std::uint64_t x = next() & mask;
    while (x >= bound) x = next() & mask;
    return x;
  }
};

}  // namespace weft

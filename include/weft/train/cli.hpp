#pragma once
// ---- cli: the checked command-line options of weft's training programs ----
// train_gpt and train_distributed read their options through this: every number is parsed in
// full (no trailing characters, no sign on an unsigned option, no overflow) and checked against
// the option's range, so "--steps -1", "--steps abc", "--lr abc" or "--keep -1" are refused with
// one line naming the program, the option, the range and the text given, e.g.
//   train_distributed: --steps expects a whole number from 0 to 18446744073709551615, got '-1' (see --help)
// instead of becoming 2^64-1, 0 or "all". A program catches `cli::option_error`, prints it and
// exits with status 2 (under MPI: every rank, through collective_check).
//
//   cli::args a("train_gpt", argc, argv);
//   while (a.next()) {
//     if (a.is("--steps")) o.steps = a.integer<std::size_t>();
//     else if (a.is("--lr")) o.lr = a.real<float>(0, 10, cli::exclusive);  // 0 < lr <= 10
//     else if (a.is("--data")) o.data = a.value();
//     else a.unknown();
//   }
#include <charconv>
#include <cmath>
#include <concepts>
#include <cstdio>
#include <limits>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>

namespace weft::cli {

/// A command-line option that cannot be used; `what()` is the whole one-line message.
class option_error : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

/// Whether the lower bound of a real range is itself allowed.
enum lower_bound : bool { inclusive = false, exclusive = true };

namespace detail {
template <class T>
std::string show(T v) {
  if constexpr (std::floating_point<T>) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", static_cast<double>(v));
    return buf;
  } else {
    return std::to_string(v);
  }
}
}  // namespace detail

/// `text` parsed in full as an integer in [lo, hi] (decimal; a sign only for signed T).
/// Throws option_error naming `program` and `option` otherwise.
template <std::integral T>
T parse_integer(std::string_view program, std::string_view option, std::string_view text,
                T lo = std::numeric_limits<T>::min(), T hi = std::numeric_limits<T>::max()) {
  T v{};
  const char* first = text.data();
  const char* last = text.data() + text.size();
  if (!text.empty() && text.front() == '+') ++first;  // "+3" is 3; "-3" is refused for unsigned T below
  const bool signs = first != text.data() && first != last && *first == '-';  // "+-3"
  const auto [end, ec] = std::from_chars(first, last, v);
  if (text.empty() || first == last || signs || ec != std::errc{} || end != last || v < lo || v > hi)
    throw option_error(std::string(program) + ": " + std::string(option) + " expects a whole number from " +
                       detail::show(lo) + " to " + detail::show(hi) + ", got '" + std::string(text) + "' (see --help)");
  return v;
}

/// `text` parsed in full as a finite real number in [lo, hi] ((lo, hi] with `exclusive`).
/// Throws option_error naming `program` and `option` otherwise.
template <std::floating_point T>
T parse_real(std::string_view program, std::string_view option, std::string_view text, T lo, T hi,
             lower_bound bound = inclusive) {
  double v = 0;
  const char* first = text.data();
  const char* last = text.data() + text.size();
  if (!text.empty() && text.front() == '+') ++first;
  const bool signs = first != text.data() && first != last && *first == '-';
  const auto [end, ec] = std::from_chars(first, last, v);
  const bool in_range = std::isfinite(v) && (bound == exclusive ? v > static_cast<double>(lo) : v >= static_cast<double>(lo)) &&
                        v <= static_cast<double>(hi);
  if (text.empty() || first == last || signs || ec != std::errc{} || end != last || !in_range)
    throw option_error(std::string(program) + ": " + std::string(option) + " expects a number " +
                       (bound == exclusive ? "above " : "from ") + detail::show(lo) + (bound == exclusive ? " up to " : " to ") +
                       detail::show(hi) + ", got '" + std::string(text) + "' (see --help)");
  return static_cast<T>(v);
}

/// Walks argv: `next()` moves to each option in turn, `value()`/`integer()`/`real()` take the
/// argument after it. Every failure is an option_error (one line).
class args {
 public:
  args(std::string program, int argc, char** argv) : program_(std::move(program)), argc_(argc), argv_(argv) {}

  /// Moves to the next option; false when there is none.
  bool next() noexcept { return ++i_ < argc_; }
  /// The current option as written.
  std::string_view option() const noexcept { return argv_[i_]; }
  bool is(std::string_view name) const noexcept { return option() == name; }
  const std::string& program() const noexcept { return program_; }

  /// The argument after the current option (consumed). Throws if there is none.
  std::string value() {
    if (i_ + 1 >= argc_) throw option_error(program_ + ": " + std::string(option()) + " needs a value (see --help)");
    const std::string_view name = option();
    ++i_;
    name_ = name;
    return argv_[i_];
  }
  /// The argument after the current option as a whole number in [lo, hi].
  template <std::integral T>
  T integer(T lo = std::numeric_limits<T>::min(), T hi = std::numeric_limits<T>::max()) {
    const std::string v = value();
    return parse_integer<T>(program_, name_, v, lo, hi);
  }
  /// The argument after the current option as a finite real number in [lo, hi] ((lo, hi]).
  template <std::floating_point T>
  T real(T lo, T hi, lower_bound bound = inclusive) {
    const std::string v = value();
    return parse_real<T>(program_, name_, v, lo, hi, bound);
  }
  /// Refuses the current option as unknown.
  [[noreturn]] void unknown() const {
    throw option_error(program_ + ": unknown option '" + std::string(option()) + "' (see --help)");
  }
  /// Refuses the current option's value with `why` ("--batch: not a multiple of 8").
  [[noreturn]] void fail(std::string_view why) const { throw option_error(program_ + ": " + std::string(why)); }

 private:
  std::string program_;
  int argc_ = 0;
  char** argv_ = nullptr;
  int i_ = 0;
  std::string name_;  // the option whose value was taken last
};

}  // namespace weft::cli

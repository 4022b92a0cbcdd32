// The checked option parser shared by train_gpt and train_distributed (weft/train/cli.hpp):
// every number parsed in full and range-checked, one-line errors (issue 27).
#include "weft/train/cli.hpp"

#include <catch2/catch.hpp>

#include <cstdint>
#include <string>
#include <vector>

using namespace weft;

namespace {
std::string error_of(auto f) {
  try {
    f();
  } catch (const cli::option_error& e) {
    return e.what();
  }
  return "";
}
}  // namespace

TEST_CASE("cli::parse_integer: whole text, no sign for unsigned, in range", "[train][cli]") {
  using z = std::size_t;
  CHECK(cli::parse_integer<z>("p", "--steps", "200") == 200);
  CHECK(cli::parse_integer<z>("p", "--steps", "+7") == 7);
  CHECK(cli::parse_integer<z>("p", "--steps", "18446744073709551615") == 18446744073709551615ull);
  CHECK(cli::parse_integer<int>("p", "--fail-rank", "-1", -1, 100) == -1);
  CHECK(error_of([] { cli::parse_integer<z>("train_distributed", "--steps", "-1"); }) ==
        "train_distributed: --steps expects a whole number from 0 to 18446744073709551615, got '-1' (see --help)");
  for (const char* bad : {"abc", "", "1.5", "1e3", "12x", " 3", "3 ", "+", "+-3", "0x10", "18446744073709551616"})
    CHECK(error_of([&] { cli::parse_integer<z>("p", "--keep", bad); }) ==
          std::string("p: --keep expects a whole number from 0 to 18446744073709551615, got '") + bad + "' (see --help)");
  CHECK_FALSE(error_of([] { cli::parse_integer<int>("p", "--fail-rank", "-2", -1, 100); }).empty());
  CHECK_FALSE(error_of([] { cli::parse_integer<int>("p", "--fail-rank", "101", -1, 100); }).empty());
  CHECK_FALSE(error_of([] { cli::parse_integer<int>("p", "--fail-rank", "99999999999", -1, 100); }).empty());
}

TEST_CASE("cli::parse_real: finite, whole text, in range", "[train][cli]") {
  CHECK(cli::parse_real<float>("p", "--lr", "3e-3", 0, 10, cli::exclusive) == 3e-3f);
  CHECK(cli::parse_real<double>("p", "--x", "0", 0, 1) == 0.0);
  CHECK(error_of([] { cli::parse_real<float>("train_distributed", "--lr", "abc", 0, 10, cli::exclusive); }) ==
        "train_distributed: --lr expects a number above 0 up to 10, got 'abc' (see --help)");
  for (const char* bad : {"", "0", "-1e-3", "11", "nan", "inf", "1e999", "3e-3x", "0x1p-3", "--3"})
    CHECK_FALSE(error_of([&] { cli::parse_real<float>("p", "--lr", bad, 0, 10, cli::exclusive); }).empty());
  CHECK(error_of([] { cli::parse_real<double>("p", "--t", "-1", 0, 5); }) ==
        "p: --t expects a number from 0 to 5, got '-1' (see --help)");
}

TEST_CASE("cli::args: options in order, values consumed, unknown and missing values refused", "[train][cli]") {
  std::vector<std::string> words{"prog", "--steps", "12", "--lr", "0.5", "--data", "x.bin", "--quiet"};
  std::vector<char*> argv;
  for (auto& w : words) argv.push_back(w.data());
  cli::args a("prog", static_cast<int>(argv.size()), argv.data());
  std::size_t steps = 0;
  float lr = 0;
  std::string data;
  bool quiet = false;
  while (a.next()) {
    if (a.is("--steps")) steps = a.integer<std::size_t>();
    else if (a.is("--lr")) lr = a.real<float>(0, 10, cli::exclusive);
    else if (a.is("--data")) data = a.value();
    else if (a.is("--quiet")) quiet = true;
    else a.unknown();
  }
  CHECK(steps == 12);
  CHECK(lr == 0.5f);
  CHECK(data == "x.bin");
  CHECK(quiet);

  std::vector<std::string> w2{"prog", "--bogus"};
  std::vector<char*> v2{w2[0].data(), w2[1].data()};
  cli::args b("prog", 2, v2.data());
  REQUIRE(b.next());
  CHECK(error_of([&] { b.unknown(); }) == "prog: unknown option '--bogus' (see --help)");
  std::vector<std::string> w3{"prog", "--steps"};
  std::vector<char*> v3{w3[0].data(), w3[1].data()};
  cli::args c("prog", 2, v3.data());
  REQUIRE(c.next());
  CHECK(error_of([&] { (void)c.integer<std::size_t>(); }) == "prog: --steps needs a value (see --help)");
  // the message names the option, not its value
  std::vector<std::string> w4{"prog", "--keep", "-1"};
  std::vector<char*> v4{w4[0].data(), w4[1].data(), w4[2].data()};
  cli::args d("prog", 3, v4.data());
  REQUIRE(d.next());
  CHECK(error_of([&] { (void)d.integer<std::size_t>(); }) ==
        "prog: --keep expects a whole number from 0 to 18446744073709551615, got '-1' (see --help)");
}

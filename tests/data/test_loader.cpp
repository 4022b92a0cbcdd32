// Tests of the loader pieces: text_corpus, split, batch_sampler, eval_batches, splitmix64.
// Most use an "identity" corpus whose token i is i, so a token names its own position.
#include "weft/data/loader.hpp"

#include <catch2/catch.hpp>

#include "../common/temp_dir.hpp"

#include <algorithm>
#include <array>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

using namespace weft;
using weft_test::temp_dir;
using weft_test::write_bytes;

namespace {

token_buffer identity_tokens(std::size_t n) {
  std::vector<std::int32_t> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<std::int32_t>(i);
  return token_buffer(std::move(v));
}

template <std::size_t B, std::size_t S>
struct batch_buffers {
  std::array<std::int32_t, B * S> inputs{};   // (batch, seq)
  std::array<std::int32_t, B * S> targets{};  // (batch, seq)
  friend bool operator==(const batch_buffers&, const batch_buffers&) = default;
};

template <std::size_t B, std::size_t S>
std::vector<batch_buffers<B, S>> draw(batch_sampler<B, S>& s, int steps) {
  std::vector<batch_buffers<B, S>> out(static_cast<std::size_t>(steps));
  for (auto& b : out) s.next(b.inputs, b.targets);
  return out;
}

}  // namespace

// ---- splitmix64 ----

TEST_CASE("splitmix64: reference outputs for seed 0", "[train][rng]") {
  // First outputs of Vigna's reference splitmix64.c seeded with 0.
  splitmix64 g{0};
  REQUIRE(g.next() == 0xe220a8397b1dcdafULL);
  REQUIRE(g.next() == 0x6e789e6aa1b965f4ULL);
  REQUIRE(g.next() == 0x06c45d188009454fULL);
}

TEST_CASE("splitmix64: below stays below and hits every value", "[train][rng]") {
  splitmix64 g{12345};
  for (std::uint64_t bound : {1ULL, 2ULL, 3ULL, 7ULL, 10ULL, 1000ULL}) {
    std::set<std::uint64_t> seen;
    for (std::uint64_t i = 0; i < 30 * bound + 100; ++i) {  // misses a value with p ~ e^-30
      const auto x = g.below(bound);
      REQUIRE(x < bound);
      seen.insert(x);
    }
    REQUIRE(seen.size() == bound);
  }
}

// ---- text_corpus ----

TEST_CASE("text_corpus: one file becomes its bytes", "[train][text_corpus]") {
  temp_dir dir;
  const std::string text = "Hello, w\u00f6rld!\nline two\n";
  write_bytes(dir / "a.txt", text);
  const auto c = text_corpus::load(dir / "a.txt");
  REQUIRE(c.size() == text.size());
  REQUIRE(byte_tokenizer::decode(c.tokens()) == text);
  REQUIRE(c.files().size() == 1);
  REQUIRE(c.files()[0].count == text.size());
}

TEST_CASE("text_corpus: several files concatenate in order", "[train][text_corpus]") {
  temp_dir dir;
  write_bytes(dir / "a.txt", "first\n");
  write_bytes(dir / "b.txt", "second");
  write_bytes(dir / "c.txt", "");
  SECTION("no separator") {
    const auto c = text_corpus::load({dir / "a.txt", dir / "b.txt", dir / "c.txt"});
    REQUIRE(byte_tokenizer::decode(c.tokens()) == "first\nsecond");
    REQUIRE(c.files().size() == 3);
    REQUIRE(c.files()[1].offset == 6);
    REQUIRE(c.files()[1].count == 6);
    REQUIRE(c.files()[2].count == 0);
  }
  SECTION("with a file separator") {
    const auto c = text_corpus::load({dir / "a.txt", dir / "b.txt"}, {.file_separator = "<|eof|>"});
    REQUIRE(byte_tokenizer::decode(c.tokens()) == "first\n<|eof|>second");
  }
}

TEST_CASE("text_corpus: fortune '%' lines become record separators", "[train][text_corpus]") {
  temp_dir dir;
  const std::string text = "%\nA fortune.\n%\nTwo %\n100% sure\n%%\n%\r\nCRLF\r\n% \n%";
  write_bytes(dir / "f", text);
  SECTION("kept by default") {
    REQUIRE(byte_tokenizer::decode(text_corpus::load(dir / "f").tokens()) == text);
  }
  SECTION("replaced when asked") {
    const auto c = text_corpus::load(dir / "f", {.fortune_records = true});
    // Only whole lines "%" (and "%\r") go; "%%", "% ", "100%" and "Two %" stay.
    REQUIRE(byte_tokenizer::decode(c.tokens()) == "\nA fortune.\n\nTwo %\n100% sure\n%%\n\nCRLF\r\n% \n\n");
  }
  SECTION("custom separator") {
    const auto c = text_corpus::load(dir / "f", {.fortune_records = true, .record_separator = "|"});
    REQUIRE(byte_tokenizer::decode(c.tokens()) == "|A fortune.\n|Two %\n100% sure\n%%\n|CRLF\r\n% \n|");
  }
}

TEST_CASE("text_corpus: a separator across the 64 KiB read boundary", "[train][text_corpus]") {
  temp_dir dir;
  for (std::size_t pad : {65533u, 65534u, 65535u, 65536u}) {
    std::string text(pad, 'x');
    text += "\n%\r\nend";
    write_bytes(dir / "big", text);
    const auto c = text_corpus::load(dir / "big", {.fortune_records = true, .record_separator = "#"});
    REQUIRE(byte_tokenizer::decode(c.tokens()) == std::string(pad, 'x') + "\n#end");
  }
}

// The system fortune corpus (the `fortunes` file against an oracle, every file at once) is
// tests/data/fortune_corpus.cpp: a program of its own, so that it can skip visibly (77) without
// the corpus and fail under WEFT_REQUIRE_REFERENCES=1.

TEST_CASE("text_corpus: missing and directory paths throw data_error", "[train][text_corpus]") {
  temp_dir dir;
  const auto missing = dir / "none.txt";
  REQUIRE_THROWS_WITH(text_corpus::load(missing), "weft::text_corpus: '" + missing.string() +
                                                      "': cannot open file (No such file or directory).");
  REQUIRE_THROWS_AS(text_corpus::load(dir.path()), data_error);
}

// ---- split ----

TEST_CASE("split: the last fraction is validation", "[train][split]") {
  const auto all = identity_tokens(1000);
  SECTION("10%") {
    const auto [train, val] = split(all, 0.1);
    REQUIRE(train.size() == 900);
    REQUIRE(val.size() == 100);
    REQUIRE(train[0] == 0);
    REQUIRE(train[899] == 899);
    REQUIRE(val[0] == 900);
    REQUIRE(val[99] == 999);
  }
  SECTION("rounds the validation size down") {
    const auto ten = identity_tokens(10);
    const auto s = split(ten, 0.25);
    REQUIRE(s.train.size() == 8);
    REQUIRE(s.validation.size() == 2);
  }
  SECTION("zero keeps everything for training") {
    const auto s = split(all, 0.0);
    REQUIRE(s.train.size() == 1000);
    REQUIRE(s.validation.empty());
  }
  SECTION("fractions outside [0, 1) are rejected") {
    REQUIRE_THROWS_AS(split(all, 1.0), std::invalid_argument);
    REQUIRE_THROWS_AS(split(all, -0.1), std::invalid_argument);
    REQUIRE_THROWS_AS(split(all, std::nan("")), std::invalid_argument);
  }
}

// ---- batch_sampler ----

TEST_CASE("batch_sampler: the same seed gives the same batches", "[train][batch_sampler]") {
  const auto all = identity_tokens(5000);
  batch_sampler<4, 16> a(all, 42), b(all, 42);
  REQUIRE(draw(a, 20) == draw(b, 20));
  REQUIRE(a.state() == sampler_state{42, 20});
}

TEST_CASE("batch_sampler: different seeds and steps give different batches", "[train][batch_sampler]") {
  const auto all = identity_tokens(5000);
  batch_sampler<4, 16> a(all, 1), b(all, 2);
  const auto da = draw(a, 10), db = draw(b, 10);
  for (int i = 0; i < 10; ++i) REQUIRE(da[i].inputs != db[i].inputs);
  for (int i = 1; i < 10; ++i) REQUIRE(da[i].inputs != da[0].inputs);
  // Rows of one batch are not all the same window.
  std::set<std::int32_t> starts;
  for (std::size_t r = 0; r < 4; ++r) starts.insert(da[0].inputs[r * 16]);
  REQUIRE(starts.size() > 1);
}

TEST_CASE("batch_sampler: targets are the inputs shifted by one", "[train][batch_sampler]") {
  constexpr std::size_t B = 3, S = 8;
  // A non-identity corpus, to test against the source tokens, not arithmetic.
  text_corpus c;
  c.add_text("The quick brown fox jumps over the lazy dog; pack my box with five dozen liquor jugs.");
  batch_sampler<B, S> s(c, 7);
  batch_buffers<B, S> buf;
  for (int step = 0; step < 50; ++step) {
    const auto st = s.step();
    s.next(buf.inputs, buf.targets);
    for (std::size_t r = 0; r < B; ++r) {
      const auto start = s.window_offset(st, r);
      REQUIRE(start + S + 1 <= c.size());
      for (std::size_t t = 0; t < S; ++t) {
        REQUIRE(buf.inputs[r * S + t] == c[start + t]);
        REQUIRE(buf.targets[r * S + t] == c[start + t + 1]);
        if (t + 1 < S) REQUIRE(buf.targets[r * S + t] == buf.inputs[r * S + t + 1]);
      }
    }
  }
}

TEST_CASE("batch_sampler: windows stay inside their range", "[train][batch_sampler]") {
  constexpr std::size_t B = 8, S = 10;
  const auto all = identity_tokens(1000);
  const auto parts = split(all, 0.2);  // train: tokens 0..799, validation: 800..999
  batch_sampler<B, S> train(parts.train, 3), val(parts.validation, 3);
  batch_buffers<B, S> buf;
  for (int step = 0; step < 200; ++step) {
    train.next(buf.inputs, buf.targets);
    for (std::size_t i = 0; i < B * S; ++i) {
      REQUIRE(buf.inputs[i] >= 0);
      REQUIRE(buf.targets[i] < 800);
    }
    val.next(buf.inputs, buf.targets);
    for (std::size_t i = 0; i < B * S; ++i) {
      REQUIRE(buf.inputs[i] >= 800);
      REQUIRE(buf.targets[i] < 1000);
    }
  }
}

TEST_CASE("batch_sampler: every window start occurs, roughly uniformly", "[train][batch_sampler]") {
  constexpr std::size_t S = 4;
  const auto all = identity_tokens(S + 10);  // exactly 10 possible windows: starts 0..9
  batch_sampler<5, S> s(all, 99);
  REQUIRE(s.windows() == 10);
  std::map<std::int32_t, int> count;
  batch_buffers<5, S> buf;
  for (int step = 0; step < 2000; ++step) {
    s.next(buf.inputs, buf.targets);
    for (std::size_t r = 0; r < 5; ++r) ++count[buf.inputs[r * S]];
  }
  REQUIRE(count.size() == 10);
  REQUIRE(count.begin()->first == 0);
  REQUIRE(count.rbegin()->first == 9);
  for (const auto& [start, n] : count) {  // 10000 draws, 1000 expected each, sd ~ 30
    INFO("start " << start);
    REQUIRE(n > 850);
    REQUIRE(n < 1150);
  }
}

TEST_CASE("batch_sampler: a range of exactly S+1 tokens has one window", "[train][batch_sampler]") {
  const auto all = identity_tokens(9);
  batch_sampler<2, 8> s(all, 5);
  batch_buffers<2, 8> buf;
  s.next(buf.inputs, buf.targets);
  REQUIRE(buf.inputs[0] == 0);
  REQUIRE(buf.inputs[8] == 0);
  REQUIRE(buf.targets[15] == 8);
}

TEST_CASE("batch_sampler: state save and restore continues bit-identically", "[train][batch_sampler]") {
  const auto all = identity_tokens(10000);
  batch_sampler<4, 32> a(all, 2024);
  (void)draw(a, 7);
  const sampler_state saved = a.state();
  const auto expected = draw(a, 10);

  SECTION("into a fresh sampler") {
    batch_sampler<4, 32> b(all, 1);  // seed overwritten by set_state
    b.set_state(saved);
    REQUIRE(draw(b, 10) == expected);
  }
  SECTION("into the same sampler") {
    a.set_state(saved);
    REQUIRE(draw(a, 10) == expected);
  }
  SECTION("reset restarts from step 0") {
    batch_sampler<4, 32> fresh(all, 2024);
    const auto first = draw(fresh, 3);
    a.reset(2024);
    REQUIRE(a.state() == sampler_state{2024, 0});
    REQUIRE(draw(a, 3) == first);
  }
  SECTION("fill reads any step without advancing") {
    batch_buffers<4, 32> buf;
    a.fill(saved.step + 2, buf.inputs, buf.targets);
    REQUIRE(buf == expected[2]);
    REQUIRE(a.state() == sampler_state{2024, saved.step + 10});
  }
}

TEST_CASE("batch_sampler: data-parallel ranks slice the single-process batch", "[train][batch_sampler]") {
  constexpr std::size_t B = 3, S = 12, world = 4;
  const auto all = identity_tokens(3000);
  batch_sampler<world * B, S> global(all, 77);
  std::vector<batch_sampler<B, S>> ranks;
  for (std::size_t r = 0; r < world; ++r) ranks.emplace_back(all, 77, data_shard{r, world});

  for (int step = 0; step < 10; ++step) {
    batch_buffers<world * B, S> g;
    global.next(g.inputs, g.targets);
    std::vector<std::int32_t> cat_in, cat_tg;
    for (auto& rk : ranks) {
      batch_buffers<B, S> l;
      rk.next(l.inputs, l.targets);
      cat_in.insert(cat_in.end(), l.inputs.begin(), l.inputs.end());
      cat_tg.insert(cat_tg.end(), l.targets.begin(), l.targets.end());
    }
    REQUIRE(cat_in == std::vector<std::int32_t>(g.inputs.begin(), g.inputs.end()));
    REQUIRE(cat_tg == std::vector<std::int32_t>(g.targets.begin(), g.targets.end()));
  }
}

TEST_CASE("batch_sampler: a token file and a buffer with the same tokens sample alike", "[train][batch_sampler]") {
  temp_dir dir;
  std::string bytes;
  std::vector<std::int32_t> toks;
  for (int i = 0; i < 700; ++i) {
    const auto t = static_cast<std::uint16_t>((i * 7919) % 65536);
    weft_test::put_le(bytes, t, 2);
    toks.push_back(t);
  }
  write_bytes(dir / "t.bin", bytes);
  const auto file = token_file::open(dir / "t.bin");
  const token_buffer buf(toks);
  batch_sampler<4, 16> a(file, 11), b(buf, 11);
  REQUIRE(draw(a, 5) == draw(b, 5));
}

TEST_CASE("batch_sampler: set-up errors", "[train][batch_sampler]") {
  const auto all = identity_tokens(8);
  REQUIRE_THROWS_WITH((batch_sampler<2, 8>(all, 0)),
                      "weft::batch_sampler: the range holds 8 tokens, fewer than one window of S+1 = 9. "
                      "Use more data, a smaller validation fraction or a shorter sequence.");
  const auto more = identity_tokens(100);
  REQUIRE_THROWS_AS((batch_sampler<2, 8>(more, 0, data_shard{2, 2})), std::invalid_argument);
  REQUIRE_THROWS_AS((batch_sampler<2, 8>(more, 0, data_shard{0, 0})), std::invalid_argument);
}

// ---- eval_batches ----

TEST_CASE("eval_batches: sequential non-overlapping windows", "[train][eval_batches]") {
  constexpr std::size_t B = 4, S = 16;
  const auto all = identity_tokens(1000);
  const auto val = split(all, 0.5).validation;  // tokens 500..999
  eval_batches<B, S> ev(val);
  REQUIRE(ev.windows() == 499 / S);              // 31 windows of S+1 tokens stepping by S
  REQUIRE(ev.size() == (499 / S) / B);           // 7 full batches
  batch_buffers<B, S> buf;
  std::int32_t expect = 500;
  std::size_t n = 0;
  while (ev.next(buf.inputs, buf.targets)) {
    ++n;
    for (std::size_t i = 0; i < B * S; ++i) {
      REQUIRE(buf.inputs[i] == expect);  // inputs tile the range in order
      REQUIRE(buf.targets[i] == expect + 1);
      ++expect;
    }
  }
  REQUIRE(n == ev.size());
  REQUIRE(expect == 500 + static_cast<std::int32_t>(ev.size() * B * S));
  REQUIRE_FALSE(ev.next(buf.inputs, buf.targets));
  ev.rewind();
  REQUIRE(ev.position() == 0);
  REQUIRE(ev.next(buf.inputs, buf.targets));
  REQUIRE(buf.inputs[0] == 500);
}

TEST_CASE("eval_batches: the last window may end on the last token", "[train][eval_batches]") {
  const auto all = identity_tokens(2 * 8 + 1);  // exactly two windows of S=8 plus one token
  eval_batches<2, 8> ev(all);
  REQUIRE(ev.size() == 1);
  batch_buffers<2, 8> buf;
  REQUIRE(ev.next(buf.inputs, buf.targets));
  REQUIRE(buf.targets[15] == 16);
}

TEST_CASE("eval_batches: data-parallel ranks slice the single-process batches", "[train][eval_batches]") {
  constexpr std::size_t B = 2, S = 5, world = 3;
  const auto all = identity_tokens(400);
  eval_batches<world * B, S> global(all);
  std::vector<eval_batches<B, S>> ranks;
  for (std::size_t r = 0; r < world; ++r) ranks.emplace_back(all, data_shard{r, world});
  for (auto& rk : ranks) REQUIRE(rk.size() == global.size());

  batch_buffers<world * B, S> g;
  while (global.next(g.inputs, g.targets)) {
    std::vector<std::int32_t> cat_in, cat_tg;
    for (auto& rk : ranks) {
      batch_buffers<B, S> l;
      REQUIRE(rk.next(l.inputs, l.targets));
      cat_in.insert(cat_in.end(), l.inputs.begin(), l.inputs.end());
      cat_tg.insert(cat_tg.end(), l.targets.begin(), l.targets.end());
    }
    REQUIRE(cat_in == std::vector<std::int32_t>(g.inputs.begin(), g.inputs.end()));
    REQUIRE(cat_tg == std::vector<std::int32_t>(g.targets.begin(), g.targets.end()));
  }
}

TEST_CASE("eval_batches: a range shorter than one batch is an error", "[train][eval_batches]") {
  const auto all = identity_tokens(20);
  REQUIRE_THROWS_AS((eval_batches<4, 8>(all)), data_error);
  REQUIRE_THROWS_AS((eval_batches<1, 8>(all, data_shard{1, 1})), std::invalid_argument);
}

// ---- the docs/data.md snippet ----

TEST_CASE("docs/data.md: text to batches", "[train][docs]") {
  temp_dir dir;
  std::string text;
  for (int i = 0; i < 2000; ++i) text += "Fortune number " + std::to_string(i) + ".\n%\n";
  write_bytes(dir / "fortunes", text);
  const std::filesystem::path fortune_path = dir / "fortunes";

  // example-begin data-text
  // Load and tokenise (one token per byte), hold out the last 10% for validation.
  const auto corpus = weft::text_corpus::load({fortune_path}, {.fortune_records = true});
  const auto [train, validation] = weft::split(corpus, 0.1);

  constexpr std::size_t B = 8, S = 64;
  weft::batch_sampler<B, S> sampler(train, /*seed=*/1337);
  std::array<std::int32_t, B * S> inputs{}, targets{};  // (batch, seq), reused every step

  for (int step = 0; step < 3; ++step) {
    sampler.next(inputs, targets);  // no allocation
    // ... training step on (inputs, targets) ...
  }
  const weft::sampler_state to_save = sampler.state();  // {seed, step}: two integers

  weft::eval_batches<B, S> eval(validation);
  while (eval.next(inputs, targets)) {
    // ... forward only, accumulate the loss ...
  }
  // example-end data-text

  REQUIRE(to_save == sampler_state{1337, 3});
  REQUIRE(eval.size() >= 1);
}

TEST_CASE("docs/data.md: token file, data parallel, resume", "[train][docs]") {
  temp_dir dir;
  std::string bytes;
  for (int i = 0; i < 20000; ++i) weft_test::put_le(bytes, static_cast<std::uint64_t>(i % 50257), 2);
  write_bytes(dir / "train.bin", bytes);
  const std::filesystem::path train_bin = dir / "train.bin";
  const std::size_t rank = 1, world = 2;

  // example-begin data-file
  // nanoGPT train.bin or llm.c shard: the format is detected from the first 4 bytes.
  const auto file = weft::token_file::open(train_bin);  // throws weft::data_error, one line
  const auto parts = weft::split(file, 0.05);

  // Rank `rank` of `world` reads rows rank*B .. rank*B+B-1 of the global batch of world*B
  // rows: the same batches as one process with batch world*B.
  constexpr std::size_t B = 4, S = 128;
  weft::batch_sampler<B, S> sampler(parts.train, /*seed=*/42, weft::data_shard{rank, world});
  std::array<std::int32_t, B * S> inputs{}, targets{};  // (batch, seq)
  sampler.next(inputs, targets);

  // Checkpoint: save sampler.state() ({seed, step}); on resume, set_state() continues
  // with exactly the batches the saved run would have drawn next.
  const weft::sampler_state saved = sampler.state();
  weft::batch_sampler<B, S> resumed(parts.train, /*seed=*/0, weft::data_shard{rank, world});
  resumed.set_state(saved);
  // example-end data-file

  REQUIRE(file.format() == token_format::nanogpt);
  std::array<std::int32_t, B * S> in2{}, tg2{};
  sampler.next(inputs, targets);
  resumed.next(in2, tg2);
  REQUIRE(inputs == in2);
  REQUIRE(targets == tg2);
}

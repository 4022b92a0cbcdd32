#pragma once
// The fixture test_f16.cpp and test_mixed_precision.cpp share: a 2-block GPT small enough to
// train in a test, its f32 plan (the reference run a mixed-precision plan is compared with), a
// learnable token stream and the optimizer settings both runs use.
#include <weft/weft.hpp>  // gpt, gpt_config, plan, batch, train_options

#include <cstddef>
#include <cstdint>

namespace weft_test {

using small_gpt = weft::gpt<weft::gpt_config<weft::vocab<64>, weft::context<32>, weft::width<64>, weft::heads<4>,
                                             weft::depth<2>>>;
using f32_plan = weft::plan<small_gpt, weft::batch<weft::micro<4>, weft::seq<32>>>;

// A learnable but not trivial task: targets are a fixed function of the token, tokens are
// pseudo-random; the same seed gives both runs the same stream.
struct token_stream {
  std::uint64_t r = 1;
  void operator()(auto tokens, auto targets) {
    for (std::size_t i = 0; i < tokens.size(); ++i) {
      r = r * 6364136223846793005ull + 1442695040888963407ull;
      const auto t = static_cast<std::int32_t>((r >> 33) % 16);
      tokens[i] = t;
      targets[i] = (t * 3 + 1) % 64;
    }
  }
};

inline weft::train_options options() {
  weft::train_options o;
  o.optimizer.lr = 3e-3f;
  return o;
}

}  // namespace weft_test

// Arenas: compile-time offsets (aligned, in order, non-overlapping), views at those offsets,
// independence of the buffers, zero fill, ownership; and place_blocks on its own.
#include <catch2/catch.hpp>

#include "weft/core/dtype.hpp"
#include "weft/core/layout_policy.hpp"
#include "weft/core/shape.hpp"
#include "weft/tensor/arena.hpp"
#include "weft/tensor/arena_layout.hpp"
#include "weft/tensor/placement.hpp"

#include <array>
#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <utility>

using namespace weft;

namespace {

using params = arena_layout<buffer<"wte", f32, shape<axis<"vocab", 10>, axis<"width", 3>>>,       // 120 B
                            buffer<"ids", std::int32_t, shape<axis<"tokens", 5>>>,                 // 20 B
                            buffer<"wpe", bf16, shape<axis<"ctx", 7>, axis<"width", 3>>, column_major>,  // 42 B
                            buffer<"pad", f64, shape<axis<"rows", 3>, axis<"cols", 2>>, strided<5, 1>>>;  // cosize 12: 96 B

// Checks every fact a layout promises about its offsets.
template <class L, std::size_t... I>
void check_offsets(std::index_sequence<I...>) {
  const std::array<std::size_t, L::count> off{L::template offset_at<I>...};
  const std::array<std::size_t, L::count> len{L::template buffer_at<I>::bytes...};
  for (std::size_t k = 0; k < L::count; ++k) {
    CHECK(off[k] % L::alignment == 0);
    CHECK(off[k] + len[k] <= L::bytes);
    if (k > 0) CHECK(off[k] >= off[k - 1] + len[k - 1]);  // in order, no overlap
  }
  CHECK(L::bytes % L::alignment == 0);
}

}  // namespace

TEST_CASE("arena_layout: offsets are aligned, ordered and disjoint", "[tensor][arena]") {
  check_offsets<params>(std::make_index_sequence<params::count>{});
  // Each buffer starts at the first multiple of 64 after the previous one.
  CHECK(params::offset_of<"wte"> == 0);
  CHECK(params::offset_of<"ids"> == 128);   // 120 -> 128
  CHECK(params::offset_of<"wpe"> == 192);   // 128 + 20 = 148 -> 192
  CHECK(params::offset_of<"pad"> == 256);   // 192 + 42 = 234 -> 256
  CHECK(params::bytes == 384);              // 256 + 96 = 352 -> 384
  CHECK(params::buffer_named<"pad">::bytes == 12 * sizeof(double));
  CHECK(params::contains<"wpe">);
  CHECK(!params::contains<"lm_head">);
  CHECK(params::index_of<"ids">() == 1);

  using wide = basic_arena_layout<256, buffer<"a", f32, shape<axis<"n", 3>>>, buffer<"b", f32, shape<axis<"n", 3>>>>;
  check_offsets<wide>(std::make_index_sequence<wide::count>{});
  CHECK(wide::offset_of<"b"> == 256);
  CHECK(wide::bytes == 512);
  CHECK(arena_layout<>::bytes == 0);
}

TEST_CASE("arena: views at the offsets, independent buffers, zero-filled", "[tensor][arena]") {
  arena<params> a;
  REQUIRE(a.data() != nullptr);
  CHECK(reinterpret_cast<std::uintptr_t>(a.data()) % 64 == 0);
  for (std::size_t k = 0; k < params::bytes; ++k) REQUIRE(a.data()[k] == std::byte{0});

  auto wte = a.get<"wte">();  // (vocab, width)
  auto ids = a.get<"ids">();  // (tokens)
  auto wpe = a.get<"wpe">();  // (ctx, width)
  auto pad = a.get<"pad">();  // (rows, cols), rows 5 apart
  STATIC_REQUIRE(std::is_same_v<decltype(wpe)::element_type, bf16>);
  STATIC_REQUIRE(decltype(wte)::size_of<"vocab"> == 10);
  CHECK(reinterpret_cast<std::byte*>(wte.data()) == a.data() + params::offset_of<"wte">);
  CHECK(reinterpret_cast<std::byte*>(pad.data()) == a.data() + 256);

  for (std::size_t v = 0; v < 10; ++v)
    for (std::size_t w = 0; w < 3; ++w) wte(v, w) = static_cast<float>(v * 3 + w + 1);
  for (std::size_t t = 0; t < 5; ++t) ids(t) = static_cast<std::int32_t>(100 + t);
  for (std::size_t c = 0; c < 7; ++c)
    for (std::size_t w = 0; w < 3; ++w) wpe(c, w) = bf16(static_cast<float>(c + 10 * w));
  for (std::size_t r = 0; r < 3; ++r)
    for (std::size_t c = 0; c < 2; ++c) pad(r, c) = -static_cast<double>(r * 2 + c);

  // Read back through fresh views: nothing overwrote anything else.
  const auto& ca = a;
  auto wte_c = ca.get<"wte">();
  STATIC_REQUIRE(std::is_same_v<decltype(wte_c)::element_type, const float>);
  for (std::size_t v = 0; v < 10; ++v)
    for (std::size_t w = 0; w < 3; ++w) CHECK(wte_c(v, w) == static_cast<float>(v * 3 + w + 1));
  for (std::size_t t = 0; t < 5; ++t) CHECK(ca.get<"ids">()(t) == static_cast<std::int32_t>(100 + t));
  for (std::size_t c = 0; c < 7; ++c)
    for (std::size_t w = 0; w < 3; ++w) CHECK(static_cast<float>(ca.get<"wpe">()(c, w)) == static_cast<float>(c + 10 * w));
  for (std::size_t r = 0; r < 3; ++r)
    for (std::size_t c = 0; c < 2; ++c) CHECK(ca.get<"pad">()(r, c) == -static_cast<double>(r * 2 + c));
  // The padding between rows of "pad" was never written.
  CHECK(reinterpret_cast<const double*>(ca.data() + 256)[3] == 0.0);
}

TEST_CASE("arena: move-only ownership", "[tensor][arena]") {
  STATIC_REQUIRE(!std::is_copy_constructible_v<arena<params>>);
  STATIC_REQUIRE(std::is_nothrow_move_constructible_v<arena<params>>);
  arena<params> a;
  a.get<"ids">()(4) = 7;
  std::byte* p = a.data();
  arena<params> b = std::move(a);
  CHECK(b.data() == p);
  CHECK(a.data() == nullptr);  // NOLINT(bugprone-use-after-move): the documented moved-from state
  CHECK(b.get<"ids">()(4) == 7);
  arena<params> c;
  c = std::move(b);
  CHECK(c.data() == p);
  CHECK(b.data() == nullptr);  // NOLINT(bugprone-use-after-move)
}

TEST_CASE("arena_layout: views from any base pointer", "[tensor][arena]") {
  alignas(64) std::array<std::byte, params::bytes> storage{};
  auto ids = params::view<"ids">(storage.data());
  ids(2) = 42;
  CHECK(*reinterpret_cast<std::int32_t*>(storage.data() + 128 + 2 * 4) == 42);
  const std::byte* cbase = storage.data();
  STATIC_REQUIRE(std::is_same_v<decltype(params::view<"ids">(cbase))::element_type, const std::int32_t>);
  STATIC_REQUIRE(std::is_same_v<decltype(params::view<"ids", device_space>(storage.data()))::space_type, device_space>);
}

TEST_CASE("place_blocks: each block at the next offset that suits both alignments", "[tensor][arena]") {
  constexpr std::array<block_request, 4> blocks{{{10, 1}, {3, 8}, {0, 4}, {17, 16}}};
  constexpr auto p = place_blocks(blocks, 4);
  STATIC_REQUIRE(p.offsets[0] == 0);
  STATIC_REQUIRE(p.offsets[1] == 16);  // 10 -> multiple of 8 (and 4)
  STATIC_REQUIRE(p.offsets[2] == 20);  // 19 -> multiple of 4
  STATIC_REQUIRE(p.offsets[3] == 32);  // 20 -> multiple of 16
  STATIC_REQUIRE(p.bytes == 52);       // 49 -> multiple of 4
  STATIC_REQUIRE(place_blocks(std::array<block_request, 0>{}, 64).bytes == 0);
  STATIC_REQUIRE(align_up(65, 64) == 128);
  STATIC_REQUIRE(is_power_of_two(64) && !is_power_of_two(48) && !is_power_of_two(0));
}

TEST_CASE("arena: the documented example", "[tensor][arena]") {
  // example-begin arena-basics
  using gpt_params = arena_layout<buffer<"wte", f32, shape<axis<"vocab", 512>, axis<"width", 64>>>,
                                  buffer<"wpe", f32, shape<axis<"ctx", 128>, axis<"width", 64>>>,
                                  buffer<"ln.w", bf16, shape<axis<"width", 64>>>>;
  static_assert(gpt_params::offset_of<"wpe"> == 512 * 64 * 4);   // right after wte (already 64-aligned)
  static_assert(gpt_params::offset_of<"ln.w"> % 64 == 0);
  static_assert(gpt_params::bytes == 512 * 64 * 4 + 128 * 64 * 4 + 128);  // 64 bf16 = 128 bytes

  arena<gpt_params> params;        // one aligned, zero-filled allocation
  auto wte = params.get<"wte">();  // (vocab, width) view at offset 0
  auto ln = params.get<"ln.w">();  // (width) view
  wte(3, 7) = 0.5f;
  ln(0) = bf16(1.0f);
  // example-end arena-basics
  CHECK(reinterpret_cast<float*>(params.data())[3 * 64 + 7] == 0.5f);
  CHECK(reinterpret_cast<bf16*>(params.data() + gpt_params::offset_of<"ln.w">)[0] == bf16(1.0f));
}

// Tensor views: element access through each policy, named coordinates, slices and tiles
// (checked against the parent view), const views, and use in constant evaluation.
#include <catch2/catch.hpp>

#include "weft/core/layout_policy.hpp"
#include "weft/core/shape.hpp"
#include "weft/tensor/space.hpp"
#include "weft/tensor/tensor.hpp"

#include <array>
#include <cstddef>
#include <numeric>
#include <type_traits>
#include <vector>

using namespace weft;

namespace {
using rows_cols = shape<axis<"rows", 6>, axis<"cols", 8>>;                   // (rows, cols)
using b_s_w = shape<axis<"batch", 2>, axis<"seq", 3>, axis<"width", 4>>;       // (batch, seq, width)

// A constexpr use: fill a (rows, cols) column-major tensor with 10 r + c and read one back.
constexpr int constexpr_probe() {
  std::array<int, 48> buf{};
  auto t = make_tensor<rows_cols, column_major>(buf.data());  // (rows, cols)
  for (std::size_t r = 0; r < 6; ++r)
    for (std::size_t c = 0; c < 8; ++c) t(r, c) = static_cast<int>(10 * r + c);
  return buf[3 + 6 * 5];  // (3, 5) by hand
}
}  // namespace

static_assert(constexpr_probe() == 35);
static_assert(sizeof(tensor_of<float, rows_cols>) == sizeof(float*));
static_assert(tensor_like<tensor_of<float, rows_cols>>);
static_assert(!tensor_like<float*>);
static_assert(std::is_same_v<tensor_of<double, rows_cols>::space_type, host_space>);

TEST_CASE("tensor: element access goes through the mapping", "[tensor]") {
  std::vector<float> buf(48);
  std::iota(buf.begin(), buf.end(), 0.f);
  auto rm = make_tensor<rows_cols>(buf.data());                  // (rows, cols)
  auto cm = make_tensor<rows_cols, column_major>(buf.data());    // (rows, cols)
  auto sd = make_tensor<shape<axis<"rows", 4>, axis<"cols", 8>>, strided<12, 1>>(buf.data());
  for (std::size_t r = 0; r < 4; ++r)
    for (std::size_t c = 0; c < 8; ++c) {
      CHECK(rm(r, c) == buf[8 * r + c]);
      CHECK(cm(r, c) == buf[r + 6 * c]);
      CHECK(sd(r, c) == buf[12 * r + c]);
      CHECK(&rm(r, c) == &rm(at<"cols">(c), at<"rows">(r)));
    }
  rm(2, 3) = -1.f;
  CHECK(buf[19] == -1.f);
  CHECK(rm.size == 48);
  CHECK(rm.bytes == 48 * sizeof(float));
  CHECK(sd.cosize == 3 * 12 + 8);
  CHECK(rm.size_of<"cols"> == 8);
  CHECK(rm.extent(0) == 6);
  CHECK(cm.stride(1) == 6);
}

TEST_CASE("tensor: slices drop one axis and keep the memory", "[tensor]") {
  std::vector<int> buf(24);
  std::iota(buf.begin(), buf.end(), 0);
  auto t = make_tensor<b_s_w, column_major>(buf.data());  // (batch, seq, width)

  auto first = t.slice(1);  // (seq, width) of batch 1
  STATIC_REQUIRE(decltype(first)::rank == 2);
  STATIC_REQUIRE(decltype(first)::size_of<"width"> == 4);
  for (std::size_t s = 0; s < 3; ++s)
    for (std::size_t w = 0; w < 4; ++w) CHECK(&first(s, w) == &t(1, s, w));

  auto mid = t.slice<"seq">(2);  // (batch, width) at seq 2
  STATIC_REQUIRE(std::is_same_v<decltype(mid)::mapping_type::shape_type,
                                shape<axis<"batch", 2>, axis<"width", 4>>>);
  for (std::size_t b = 0; b < 2; ++b)
    for (std::size_t w = 0; w < 4; ++w) CHECK(&mid(b, w) == &t(b, 2, w));

  auto point = t.slice(1).slice(2).slice(3);  // rank 0: one element
  STATIC_REQUIRE(decltype(point)::rank == 0);
  CHECK(&point() == &t(1, 2, 3));

  auto bare = t.unnamed().slice(1);  // the same on the bare layout
  CHECK(&bare(2, 3) == &t(1, 2, 3));
}

TEST_CASE("tensor: tiles are sub-views of the parent", "[tensor]") {
  std::vector<double> buf(48);
  auto check = [&]<class Policy>() {
    auto t = make_tensor<rows_cols, Policy>(buf.data());  // (rows, cols)
    for (std::size_t gi = 0; gi < 3; ++gi)
      for (std::size_t gj = 0; gj < 2; ++gj) {
        auto tl = t.template tile<shape<axis<"rows", 2>, axis<"cols", 4>>>(gi, gj);  // (rows/3, cols/2)
        STATIC_REQUIRE(decltype(tl)::size == 8);
        for (std::size_t i = 0; i < 2; ++i)
          for (std::size_t j = 0; j < 4; ++j) CHECK(&tl(i, j) == &t(2 * gi + i, 4 * gj + j));
      }
    // Tiles named in another order, and an axis left whole.
    auto swapped = t.template tile<shape<axis<"cols", 4>, axis<"rows", 3>>>(1, 1);
    CHECK(&swapped(2, 3) == &t(5, 7));
    auto band = t.template tile<shape<axis<"cols", 2>>>(3);  // all rows, cols 6..7
    STATIC_REQUIRE(decltype(band)::template size_of<"rows"> == 6);
    CHECK(&band(5, 1) == &t(5, 7));
  };
  check.template operator()<row_major>();
  check.template operator()<column_major>();
  check.template operator()<strided<9, 1>>();
  check.template operator()<tiled<shape<axis<"rows", 2>, axis<"cols", 2>>, column_major>>();
}

TEST_CASE("tensor: const views and conversions", "[tensor]") {
  std::array<float, 48> buf{};
  tensor_of<float, rows_cols> t{buf.data()};
  tensor_of<const float, rows_cols> c = t;  // adding const is implicit
  t(5, 7) = 2.5f;
  CHECK(c(5, 7) == 2.5f);
  CHECK(c.data() == buf.data());
  STATIC_REQUIRE(std::is_same_v<decltype(t.as_const()), decltype(c)>);
  STATIC_REQUIRE(!std::is_convertible_v<decltype(c), decltype(t)>);  // dropping it is not
  STATIC_REQUIRE(std::is_same_v<decltype(c(0, 0)), const float&>);

  tensor deduced{buf.data(), row_major::mapping<rows_cols>{}};
  STATIC_REQUIRE(std::is_same_v<decltype(deduced), decltype(t)>);
  CHECK(tensor_of<float, rows_cols>{}.data() == nullptr);
}

TEST_CASE("tensor: device tensors carry their space; unnamed() keeps only integers", "[tensor]") {
  using dev = tensor_of<float, rows_cols, row_major, device_space>;
  STATIC_REQUIRE(std::is_same_v<dev::space_type, device_space>);
  STATIC_REQUIRE(tensor_like<dev>);
  STATIC_REQUIRE(!host_accessible_space<device_space>);
  STATIC_REQUIRE(host_accessible_space<host_space>);
  // Slicing and tiling compute pointers only; they are fine on the host.
  std::array<float, 48> stand_in{};  // host memory standing in for a device allocation
  float* fake = stand_in.data();
  dev d{fake};
  CHECK(d.slice(2).data() == fake + 16);
  CHECK(d.tile<shape<axis<"cols", 4>>>(1).data() == fake + 4);
  auto u = d.unnamed();
  STATIC_REQUIRE(std::is_same_v<decltype(u), tensor<float, dev::mapping_type::layout_type, device_space>>);
  CHECK(u.data() == fake);
}

TEST_CASE("tensor: the documented example", "[tensor]") {
  // example-begin tensor-basics
  using bsw = shape<axis<"batch", 2>, axis<"seq", 3>, axis<"width", 4>>;
  std::vector<float> memory(2 * 3 * 4);
  auto x = make_tensor<bsw>(memory.data());  // (batch, seq, width), row-major, host memory

  x(1, 2, 3) = 1.f;                                       // memory[23]
  x(at<"width">(0), at<"batch">(1), at<"seq">(0)) = 2.f;  // memory[12]
  auto seq = x.slice(1);                                  // (seq, width) of batch 1
  auto col = x.slice<"width">(3);                         // (batch, seq) at width 3
  auto half = x.tile<shape<axis<"width", 2>>>(1);         // (batch, seq, width/2): widths 2..3
  CHECK(seq(2, 3) == 1.f);
  CHECK(col(1, 2) == 1.f);
  CHECK(half(1, 2, 1) == 1.f);
  CHECK(memory[12] == 2.f);
  static_assert(decltype(half)::size_of<"width"> == 2);
  // example-end tensor-basics
}

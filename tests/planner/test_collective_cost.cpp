// The alpha-beta collectives and the link_spec each mesh axis lands on.
#include <weft/planner/collective_cost.hpp>

#include <catch2/catch.hpp>

using namespace weft::planner;

TEST_CASE("axis_link follows the rank order onto nodes and islands", "[planner][collective]") {
  cluster c = presets::a100_80gb(4);  // 32 GPUs, 8 per node
  CHECK(axis_link(c, 1, 1).kind == link_kind::none);
  CHECK(axis_link(c, 8, 1).kind == link_kind::intra_node);   // tp = 8: one node
  CHECK(axis_link(c, 2, 4).kind == link_kind::intra_node);   // dp = 2 after tp = 4: still one node
  const link_spec dp_after_tp8 = axis_link(c, 4, 8);              // one member per node: one NIC each
  CHECK(dp_after_tp8.kind == link_kind::inter_node);
  CHECK(dp_after_tp8.bandwidth == Approx(c.inter_bandwidth * collective_efficiency));
  const link_spec dp_alone = axis_link(c, 32, 1);                 // eight members per node drive eight NICs
  CHECK(dp_alone.bandwidth == Approx(8 * c.inter_bandwidth * collective_efficiency));
  c.islands = 2;  // two clusters of two nodes
  CHECK(axis_link(c, 2, 16).kind == link_kind::inter_island);
  CHECK(axis_link(c, 2, 8).kind == link_kind::inter_node);
}

TEST_CASE("ring and tree all-reduce by the alpha-beta model", "[planner][collective]") {
  const link_spec l{link_kind::inter_node, 10e9, 1e-5};
  // ring: 2(n − 1)α + 2(n − 1)/n · S/β; 8 ranks, 1 GB
  const double ring = 2 * 7 * 1e-5 + 2.0 * 7 / 8 * 1e9 / 10e9;
  CHECK(all_reduce_seconds(1e9, 8, l) == Approx(ring));
  // tiny messages on many ranks: the tree's 2·log2(n)·α wins over the ring's 2(n − 1)·α
  const double tree = 2 * 10 * 1e-5 + 2 * 8.0 / 10e9;
  CHECK(all_reduce_seconds(8, 1024, l) == Approx(tree));
  CHECK(reduce_scatter_seconds(1e9, 8, l) == Approx(ring / 2));
  CHECK(all_reduce_seconds(1e9, 1, l) == 0);
  CHECK(p2p_seconds(1e6, l) == Approx(1e-5 + 1e6 / 10e9));
}

TEST_CASE("data-parallel bytes are comm_volume's per ZeRO stage", "[planner][collective]") {
  const std::uint64_t psi = 1000, n = 4;
  const auto z0 = data_parallel_bytes(psi, n, 0, 4, 2, 2), z1 = data_parallel_bytes(psi, n, 1, 4, 2, 2);
  const auto z3 = data_parallel_bytes(psi, n, 3, 1, 2, 2);
  CHECK(z0 == 2 * 3 * 250 * 2);
  CHECK(z1 == z0);            // ZeRO-1 moves what plain data parallelism does
  CHECK(z3 * 2 == z0 * 3);    // ZeRO-3: 1.5× (ZeRO paper, Section 7.2.2)
}

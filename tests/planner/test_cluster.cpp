// Cluster presets and look-up.
#include <weft/planner/cluster.hpp>

#include <catch2/catch.hpp>

using namespace weft::planner;

TEST_CASE("presets carry their datasheet numbers", "[planner][cluster]") {
  constexpr cluster a = presets::a100_80gb(16);
  STATIC_REQUIRE(a.gpus() == 128);
  CHECK(a.peak_flops_16 == 312e12);
  CHECK(a.memory_bytes == 85.9e9);  // 80 GiB
  constexpr cluster h = presets::h100_sxm(2);
  CHECK(h.peak_flops_16 / a.peak_flops_16 == Approx(3.17).epsilon(0.01));
  CHECK(h.inter_bandwidth == 2 * a.inter_bandwidth);  // 400 against 200 Gb/s per GPU
  constexpr cluster h2 = presets::h200(1);
  CHECK(h2.memory_bytes == 141e9);
  CHECK(h2.peak_flops_16 == h.peak_flops_16);  // the same compute as H100 SXM
  constexpr cluster c = presets::cpu_mpi(2);
  CHECK(c.cpu);
  CHECK(c.shared_cores == 1);
}

TEST_CASE("find_preset by name, and islands", "[planner][cluster]") {
  CHECK(find_preset("h100-sxm", 4).found);
  CHECK(find_preset("h100-sxm", 4).value.nodes == 4);
  CHECK(find_preset("a100", 1).value.name == "a100-80gb");
  CHECK_FALSE(find_preset("tpu-v5", 1).found);
  cluster two = presets::h100_sxm(16);
  two.islands = 2;
  CHECK(two.nodes_per_island() == 8);
  STATIC_REQUIRE(cluster_type<h100_nodes<8>>);
  STATIC_REQUIRE(h100_nodes<8>::value.gpus() == 64);
}

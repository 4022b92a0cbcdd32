// split: the world as a rows x cols grid (2 x size/2; run with an even -np, e.g. 4 = 2x2),
// collectives inside rows and columns, key ordering, and splits of splits.
#include "mpi_check.hpp"  // WEFT_CHECK, finish

#include "weft/comm/mpi.hpp"  // mpi_communicator, mpi::world

#include <cstdint>
#include <vector>

using namespace weft;

int main(int argc, char** argv) {
  auto world = mpi::world(argc, argv);
  test::world_rank = world.rank();
  const int me = world.rank(), size = world.size();
  if (size % 2 != 0) world.abort(2, "split test: run with an even number of ranks");
  const int rows = 2, cols = size / 2;
  const int row = me / cols, col = me % cols;  // row-major grid

  // ---- rows: ranks with the same row index, ordered by column ----
  auto row_comm = world.split(row, col);
  WEFT_CHECK(row_comm.size() == cols);
  WEFT_CHECK(row_comm.rank() == col);
  std::int32_t sum[1] = {me};
  row_comm.all_reduce(sum, reduce_op::sum);
  int expected_row_sum = 0;
  for (int c = 0; c < cols; ++c) expected_row_sum += row * cols + c;
  WEFT_CHECK(sum[0] == expected_row_sum);

  // ---- columns: ranks with the same column index, ordered by row ----
  auto col_comm = world.split(col, row);
  WEFT_CHECK(col_comm.size() == rows);
  WEFT_CHECK(col_comm.rank() == row);
  std::int32_t mine[1] = {me};
  std::vector<std::int32_t> members(rows);  // (rows): world rank of each column member
  col_comm.all_gather(mine, members);
  for (int r = 0; r < rows; ++r) WEFT_CHECK(members[r] == r * cols + col);

  // reduce_scatter inside a row: block b of rank (row, c) holds 100*c + b
  std::vector<double> in(cols), out(1);  // in: (cols, 1)
  for (int b = 0; b < cols; ++b) in[b] = 100.0 * col + b;
  row_comm.reduce_scatter(in, out);
  double expected_rs = 0;
  for (int c = 0; c < cols; ++c) expected_rs += 100.0 * c + col;
  WEFT_CHECK(out[0] == expected_rs);

  // broadcast from the last member of each column reaches that column only
  std::int64_t token[1] = {me == (rows - 1) * cols + col ? 1000 + col : -1};
  col_comm.broadcast(token, rows - 1);
  WEFT_CHECK(token[0] == 1000 + col);

  // point-to-point inside a row uses row ranks: send right, receive from the left
  if (cols > 1) {
    std::int32_t got[1] = {-1};
    std::int32_t sent[1] = {me};
    auto rx = row_comm.irecv(got, (col + cols - 1) % cols, 5);
    row_comm.send(sent, (col + 1) % cols, 5);
    rx.wait();
    WEFT_CHECK(got[0] == row * cols + (col + cols - 1) % cols);
  }

  // ---- key decides the order: a negative key reverses the world ----
  auto reversed = world.split(0, -me);
  WEFT_CHECK(reversed.size() == size);
  WEFT_CHECK(reversed.rank() == size - 1 - me);

  // ---- split of a split: each row split again by column parity ----
  auto parity = row_comm.split(col % 2, col);
  const int same_parity = (cols + 1 - col % 2) / 2;  // columns in this row with this parity
  WEFT_CHECK(parity.size() == same_parity);
  WEFT_CHECK(parity.rank() == col / 2);
  std::int32_t count[1] = {1};
  parity.all_reduce(count, reduce_op::sum);
  WEFT_CHECK(count[0] == same_parity);

  // ---- the example of docs/communication.md: a (dp, tp) grid, a gradient sum, a ZeRO shard ----
  {
    // example-begin comm-grid
    const int tp = 2;                                           // (dp, tp) grid, row-major
    auto tp_group = world.split(world.rank() / tp, world.rank() % tp);
    auto dp_group = world.split(world.rank() % tp, world.rank() / tp);

    std::vector<float> grads(dp_group.size() * 512, 1.0f);     // (params), a multiple of dp
    dp_group.all_reduce(grads, weft::reduce_op::sum);          // data-parallel gradient sum

    std::vector<float> shard(grads.size() / dp_group.size());  // (params / dp)
    dp_group.reduce_scatter(grads, shard);                     // ZeRO: each rank keeps its shard
    dp_group.all_gather(shard, grads);                         // ... and gathers the update
    // example-end comm-grid
    WEFT_CHECK(tp_group.size() == tp && tp_group.rank() == me % tp);
    WEFT_CHECK(dp_group.size() == size / tp && dp_group.rank() == me / tp);
    const float dp = static_cast<float>(dp_group.size());
    for (float g : grads) WEFT_CHECK(g == dp * dp);  // summed twice over dp ranks
  }

  // sub-communicators outlive nothing: they are freed here before the world finalises
  return test::finish(world, "mpi_split");
}

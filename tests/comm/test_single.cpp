// single_world: collectives over one rank are identities, messages to self follow MPI's
// matching rule, and every misuse ends the program with one line (checked in a child
// process: fork, capture stderr, read the exit status).
#include <catch2/catch.hpp>

#include "weft/comm/check.hpp"   // collective_check, local_check
#include "weft/comm/single.hpp"  // single_world

#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdint>
#include <cstdio>
#include <span>
#include <string>
#include <utility>
#include <vector>

using namespace weft;

namespace {

struct ended {
  int status;          // exit status, -1 if the child did not exit normally
  std::string stderr_text;
};

// Runs fn in a child process and reports how it ended.
template <class Fn>
ended run_in_child(Fn fn) {
  int pipe_fds[2];
  REQUIRE(::pipe(pipe_fds) == 0);
  std::fflush(nullptr);
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::dup2(pipe_fds[1], 2);
    ::close(pipe_fds[0]);
    fn();
    std::_Exit(0);
  }
  ::close(pipe_fds[1]);
  std::string text;
  char buffer[256];
  for (ssize_t n; (n = ::read(pipe_fds[0], buffer, sizeof buffer)) > 0;) text.append(buffer, static_cast<std::size_t>(n));
  ::close(pipe_fds[0]);
  int wstatus = 0;
  ::waitpid(pid, &wstatus, 0);
  return {WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : -1, text};
}

std::size_t count_lines(const std::string& s) {
  std::size_t n = 0;
  for (char ch : s) n += (ch == '\n');
  return n;
}

}  // namespace

TEST_CASE("single_world is a communicator of one rank", "[comm][single]") {
  STATIC_REQUIRE(communicator<single_world>);
  single_world world;
  CHECK(world.rank() == 0);
  CHECK(world.size() == 1);
  auto sub = world.split(3, 7);
  CHECK(sub.rank() == 0);
  CHECK(sub.size() == 1);
}

TEST_CASE("single_world collectives are identities", "[comm][single]") {
  single_world world;
  std::vector<float> x{1.5f, -2.f, 3.f};
  world.all_reduce(x, reduce_op::sum);
  CHECK(x == std::vector<float>{1.5f, -2.f, 3.f});
  world.all_reduce(x, reduce_op::max);
  CHECK(x == std::vector<float>{1.5f, -2.f, 3.f});

  const std::vector<double> in{1, 2, 3, 4};
  std::vector<double> out(4, 0.0);
  world.reduce_scatter(in, out);
  CHECK(out == in);
  std::vector<double> gathered(4, 0.0);
  world.all_gather(in, gathered);
  CHECK(gathered == in);

  std::array<std::int64_t, 2> b{7, 8};
  world.broadcast(b, 0);
  CHECK(b == std::array<std::int64_t, 2>{7, 8});
  world.barrier();
}

TEST_CASE("single_world delivers messages to self in MPI order", "[comm][single]") {
  single_world world;
  SECTION("send then recv, matched by tag") {
    const std::int32_t first[2] = {1, 2}, second[2] = {3, 4}, other[2] = {5, 6};
    world.send(first, 0, 10);
    world.send(other, 0, 11);
    world.send(second, 0, 10);
    std::int32_t got[2] = {};
    world.recv(got, 0, 10);
    CHECK((got[0] == 1 && got[1] == 2));  // first sent, first received
    world.recv(got, 0, 11);
    CHECK((got[0] == 5 && got[1] == 6));
    world.recv(got, 0, 10);
    CHECK((got[0] == 3 && got[1] == 4));
  }
  SECTION("irecv posted before the send completes when the send arrives") {
    std::uint8_t got[3] = {};
    auto rx1 = world.irecv(got, 0, 1);
    CHECK_FALSE(rx1.test());
    const std::uint8_t data[3] = {9, 8, 7};
    auto tx = world.isend(data, 0, 1);
    CHECK(tx.test());
    CHECK(rx1.test());
    CHECK((got[0] == 9 && got[2] == 7));
  }
  SECTION("two posted receives with one tag are matched in post order") {
    double a[1] = {0}, b[1] = {0};
    auto ra = world.irecv(a, 0, 4);
    auto rb = world.irecv(b, 0, 4);
    const double one[1] = {1}, two[1] = {2};
    world.send(one, 0, 4);
    world.send(two, 0, 4);
    rb.wait();
    ra.wait();
    CHECK(a[0] == 1);
    CHECK(b[0] == 2);
  }
  SECTION("a moved request keeps the operation") {
    float got[1] = {0};
    auto r = world.irecv(got, 0, 2);
    auto moved = std::move(r);
    CHECK(r.test());  // moved-from: idle
    const float v[1] = {4.5f};
    world.send(v, 0, 2);
    moved.wait();
    CHECK(got[0] == 4.5f);
  }
  SECTION("splits share the mailbox: they are the same world") {
    auto sub = world.split(0, 0);
    const std::int64_t v[1] = {42};
    sub.send(v, 0, 3);
    std::int64_t got[1] = {0};
    world.recv(got, 0, 3);
    CHECK(got[0] == 42);
  }
}

TEST_CASE("single_world misuse ends the program with one line", "[comm][single]") {
  SECTION("recv that can never be satisfied") {
    auto e = run_in_child([] {
      single_world w;
      float x[1];
      w.recv(x, 0, 5);
    });
    CHECK(e.status == 1);
    CHECK_THAT(e.stderr_text, Catch::Contains("weft[rank 0/1]: weft::single_world::recv: no message with tag 5"));
    CHECK(count_lines(e.stderr_text) == 1);
  }
  SECTION("a pending irecv going out of scope") {
    auto e = run_in_child([] {
      single_world w;
      float x[1];
      auto r = w.irecv(x, 0, 6);
    });
    CHECK(e.status == 1);
    CHECK_THAT(e.stderr_text, Catch::Contains("no matching send"));
  }
  SECTION("a peer other than rank 0") {
    auto e = run_in_child([] {
      single_world w;
      const float x[1] = {0};
      w.send(x, 1, 0);
    });
    CHECK(e.status == 1);
    CHECK_THAT(e.stderr_text, Catch::Contains("dest is rank 1, but a world of one has only rank 0"));
  }
  SECTION("type or count mismatch") {
    auto e = run_in_child([] {
      single_world w;
      const float x[2] = {0, 0};
      w.send(x, 0, 0);
      double y[2];
      w.recv(y, 0, 0);
    });
    CHECK(e.status == 1);
    CHECK_THAT(e.stderr_text, Catch::Contains("another type or count"));
  }
  SECTION("reduce_scatter sizes") {
    auto e = run_in_child([] {
      single_world w;
      const std::vector<float> in(4);
      std::vector<float> out(2);
      w.reduce_scatter(in, out);
    });
    CHECK(e.status == 1);
    CHECK_THAT(e.stderr_text, Catch::Contains("input has 4 elements and output 2"));
  }
  SECTION("abort prints one flattened line and exits with the code") {
    auto e = run_in_child([] { single_world{}.abort(9, "two\nlines"); });
    CHECK(e.status == 9);
    CHECK(e.stderr_text == "weft[rank 0/1]: two lines\n");
  }
}

TEST_CASE("collective_check and local_check over a world of one", "[comm][single][check]") {
  single_world world;
  collective_check(world, true, "never printed");  // returns
  local_check(world, true, "never printed");
  auto collective = run_in_child([] {
    single_world w;
    collective_check(w, false, "weft::test: the data file is missing", 7);
  });
  CHECK(collective.status == 7);
  CHECK(collective.stderr_text == "weft[rank 0/1]: weft::test: the data file is missing\n");
  auto local = run_in_child([] {
    single_world w;
    local_check(w, false, "weft::test: rank-local", 5);
  });
  CHECK(local.status == 5);
  CHECK(local.stderr_text == "weft[rank 0/1]: weft::test: rank-local\n");
}

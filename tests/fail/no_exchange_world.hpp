#pragma once
// A communicator without an all-to-all, shared by the compile-fail tests of expert parallelism
// (distributed_step_ep_without_all_to_all.cpp, make_training_step_ep_without_all_to_all.cpp):
// single_world's collectives, nonblocking and variable-count ones included, but no all_to_all
// or all_to_all_v (NCCL has none of its own). Not a test itself: the CTest glob takes *.cpp.
#include "weft/comm/single.hpp"      // single_world, communicator
#include "weft/comm/all_to_all.hpp"  // all_to_all_communicator

#include <string_view>

struct no_exchange_world {
  weft::single_world w;
  using request = weft::single_world::request;
  int rank() const { return w.rank(); }
  int size() const { return w.size(); }
  void barrier() { w.barrier(); }
  no_exchange_world split(int color, int key) { return {w.split(color, key)}; }
  void abort(int code, std::string_view msg) const { w.abort(code, msg); }
  template <class... A> void all_reduce(A&&... a) { w.all_reduce(a...); }
  template <class... A> auto iall_reduce(A&&... a) { return w.iall_reduce(a...); }
  template <class... A> void reduce_scatter(A&&... a) { w.reduce_scatter(a...); }
  template <class... A> void reduce_scatter_v(A&&... a) { w.reduce_scatter_v(a...); }
  template <class... A> void all_gather(A&&... a) { w.all_gather(a...); }
  template <class... A> void all_gather_v(A&&... a) { w.all_gather_v(a...); }
  template <class... A> void broadcast(A&&... a) { w.broadcast(a...); }
  template <class... A> void send(A&&... a) { w.send(a...); }
  template <class... A> void recv(A&&... a) { w.recv(a...); }
  template <class... A> auto isend(A&&... a) { return w.isend(a...); }
  template <class... A> auto irecv(A&&... a) { return w.irecv(a...); }
};
static_assert(weft::communicator<no_exchange_world> && !weft::all_to_all_communicator<no_exchange_world>);

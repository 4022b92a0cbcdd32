// expect: weft::make_training_step: expert_parallel needs a communicator with all_to_all and all_to_all_v
// An expert-parallel plan over a communicator that has the collectives of `communicator` but no
// all-to-all (NCCL has none of its own): the entry point says so at the call.
#include "weft/comm/single.hpp"
#include "weft/model/moe_gpt.hpp"
#include "weft/exec/distributed_step.hpp"
using namespace weft;
// single_world's collectives, without its all_to_all.
struct no_exchange_world {
  single_world w;
  int rank() const { return w.rank(); }
  int size() const { return w.size(); }
  void barrier() { w.barrier(); }
  no_exchange_world split(int color, int key) { return {w.split(color, key)}; }
  void abort(int code, std::string_view msg) const { w.abort(code, msg); }
  template <class... A> void all_reduce(A&&... a) { w.all_reduce(a...); }
  template <class... A> void reduce_scatter(A&&... a) { w.reduce_scatter(a...); }
  template <class... A> void all_gather(A&&... a) { w.all_gather(a...); }
  template <class... A> void broadcast(A&&... a) { w.broadcast(a...); }
  template <class... A> void send(A&&... a) { w.send(a...); }
  template <class... A> void recv(A&&... a) { w.recv(a...); }
  template <class... A> auto isend(A&&... a) { return w.isend(a...); }
  template <class... A> auto irecv(A&&... a) { return w.irecv(a...); }
};
static_assert(communicator<no_exchange_world> && !all_to_all_communicator<no_exchange_world>);
using cfg = gpt_config<vocab<32>, context<8>, width<16>, heads<4>, depth<2>>;
using S = strategy<mesh<axis<"dp">, axis<"ep", 2>>, expert_parallel<"ep">, data_parallel<"dp">>;
using P = plan<moe_gpt<cfg, moe_mlp<16, 4, 2, 12>>, batch<micro<2>, seq<8>>, S>;
void train(no_exchange_world& world) { auto step = make_training_step<P>(world); }

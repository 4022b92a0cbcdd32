#pragma once
// ---- nccl_communicator: the communicator of device buffers, over NCCL ----
// The same operations and rules as every weft communicator (comm/communicator.hpp) — all_reduce
// in place, reduce_scatter (size·n -> n, summed), all_gather (n -> size·n, rank-major),
// broadcast, send/recv and their non-blocking forms, split, barrier, abort — on *device* buffers,
// enqueued on the communicator's CUDA stream. A call returns once the operation is enqueued;
// work later on the same stream sees its result (stream order), and `synchronize()` waits for it
// on the host. Element types: f32, f64, bf16, int32, int64, uint8 (NCCL's own types: nothing is
// converted). Grouped sends and receives (a pipeline's sends and receives posted together) go
// between `group_begin()` and `group_end()`.
//
// Bootstrap (`bootstrap(host_world, ...)`): the host world (MPI under mpirun or srun, or a world
// of one) locates each rank on its node, picks the device `local rank % devices`, broadcasts an
// ncclUniqueId from rank 0 and initialises the NCCL communicator. `split` is ncclCommSplit.
//
// Failures end the whole job with one line, never a hang: every NCCL/CUDA error status aborts
// through the host world; `check_async()` polls ncclCommGetAsyncError; a watchdog thread, when
// started (`start_watchdog(timeout)`), aborts the NCCL communicator (ncclCommAbort) and the job
// if an enqueued operation has not completed within the timeout — as when a peer died inside a
// collective. The launcher (mpirun, srun) also ends the job when a process dies.
//
// Needs the CUDA toolkit's headers and NCCL (CMake target weft::nccl). NCCL refuses two ranks on
// one device; a machine with one GPU tests multi-process strategies through a host communicator
// staging device buffers instead (docs/multi_gpu.md).
#include "weft/comm/bootstrap.hpp"     // locate_on_nodes, choose_device, broadcast_bytes
#include "weft/comm/communicator.hpp"  // reduce_op, comm_scalar
#include "weft/core/dtype.hpp"         // bf16

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <type_traits>

#include <cuda_runtime.h>
#include <nccl.h>

namespace weft {

namespace detail {
// ---- NCCL's datatype and reduction of each element type ----
template <class T>
constexpr ncclDataType_t nccl_type() {
  if constexpr (std::is_same_v<T, float>) return ncclFloat32;
  else if constexpr (std::is_same_v<T, double>) return ncclFloat64;
  else if constexpr (std::is_same_v<T, bf16>) return ncclBfloat16;
  else if constexpr (std::is_same_v<T, f16>) return ncclFloat16;
  else if constexpr (std::is_same_v<T, std::int32_t>) return ncclInt32;
  else if constexpr (std::is_same_v<T, std::int64_t>) return ncclInt64;
  else {
    static_assert(std::is_same_v<T, std::uint8_t>,
                  "weft::nccl_communicator: this element type has no NCCL datatype. Use f32, f64, bf16, f16, "
                  "int32, int64 or uint8.");
    return ncclUint8;
  }
}
template <class T>
concept nccl_scalar = comm_scalar<T> || std::is_same_v<T, bf16>;
constexpr ncclRedOp_t nccl_op(reduce_op op) { return op == reduce_op::sum ? ncclSum : ncclMax; }
}  // namespace detail

/// A group of ranks running collectives on device buffers over NCCL (see the top of this file).
class nccl_communicator {
 public:
  /// Ends the job (the host world's abort): one line, every rank gone.
  using abort_fn = std::function<void(int, std::string_view)>;

  /// Non-blocking send or receive: a CUDA event recorded after the operation on the stream.
  class request {
   public:
    request() = default;
    void wait() {
      if (event_) {
        owner_->check_cuda(cudaEventSynchronize(event_.get()), "cudaEventSynchronize");
        event_.reset();
      }
    }
    bool test() {
      if (!event_) return true;
      const cudaError_t e = cudaEventQuery(event_.get());
      if (e == cudaErrorNotReady) return false;
      owner_->check_cuda(e, "cudaEventQuery");
      event_.reset();
      return true;
    }

   private:
    friend class nccl_communicator;
    struct destroy_event {
      void operator()(CUevent_st* e) const { cudaEventDestroy(e); }
    };
    request(const nccl_communicator* owner, cudaEvent_t e) : owner_(owner), event_(e, destroy_event{}) {}
    const nccl_communicator* owner_ = nullptr;
    std::shared_ptr<CUevent_st> event_{nullptr, destroy_event{}};
  };

  /// Collective over `host`: one NCCL communicator over all its ranks, each on the device
  /// `local rank % devices` (or `device` when >= 0). `stream` null: a new non-blocking stream.
  template <communicator Host>
  static nccl_communicator bootstrap(Host& host, int device = -1, cudaStream_t stream = nullptr) {
    const node_placement where = locate_on_nodes(host);
    int devices = 0;
    const cudaError_t e = cudaGetDeviceCount(&devices);
    const bool have_device = e == cudaSuccess && devices > 0;
    // Every rank must have a device, or none starts NCCL: agree first, then fail with one line.
    std::int32_t missing = have_device ? 0 : 1;
    host.all_reduce(std::span<std::int32_t>(&missing, 1), reduce_op::sum);
    if (missing != 0) {
      host.abort(2, "weft::nccl_communicator::bootstrap: " + std::to_string(missing) +
                        " rank(s) see no CUDA device (" + std::string(cudaGetErrorString(e)) +
                        "). Run one process per GPU on GPU nodes.");
    }
    const int dev = device >= 0 ? device : choose_device(where.local_rank, devices);
    std::array<std::uint8_t, NCCL_UNIQUE_ID_BYTES> id_bytes{};
    if (host.rank() == 0) {
      ncclUniqueId id;
      if (const ncclResult_t r = ncclGetUniqueId(&id); r != ncclSuccess)
        host.abort(2, std::string("weft::nccl_communicator::bootstrap: ncclGetUniqueId: ") + ncclGetErrorString(r));
      std::memcpy(id_bytes.data(), &id, sizeof id);
    }
    id_bytes = broadcast_bytes(host, id_bytes, 0);
    ncclUniqueId id;
    std::memcpy(&id, id_bytes.data(), sizeof id);
    abort_fn abort = [&host](int code, std::string_view msg) { host.abort(code, msg); };
    return nccl_communicator(host.rank(), host.size(), dev, id, stream, std::move(abort));
  }

  int rank() const { return s_->rank; }
  int size() const { return s_->size; }
  int device() const { return s_->device; }
  cudaStream_t stream() const { return s_->stream; }
  ncclComm_t handle() const { return s_->comm; }

  // ---- collectives (enqueued on stream(); device buffers) ----
  template <detail::nccl_scalar T>
  void all_reduce(std::span<T> inout, reduce_op op) {
    nccl(ncclAllReduce(inout.data(), inout.data(), inout.size(), detail::nccl_type<T>(), detail::nccl_op(op), s_->comm,
                       s_->stream),
         "ncclAllReduce");
  }
  template <detail::nccl_scalar T>
  void reduce_scatter(std::span<const T> in, std::span<T> out) {
    if (in.size() != out.size() * static_cast<std::size_t>(size()))
      abort(1, "weft::nccl_communicator::reduce_scatter: the input has " + std::to_string(in.size()) +
                   " elements, not size x output = " + std::to_string(out.size() * static_cast<std::size_t>(size())));
    nccl(ncclReduceScatter(in.data(), out.data(), out.size(), detail::nccl_type<T>(), ncclSum, s_->comm, s_->stream),
         "ncclReduceScatter");
  }
  template <detail::nccl_scalar T>
  void all_gather(std::span<const T> in, std::span<T> out) {
    if (out.size() != in.size() * static_cast<std::size_t>(size()))
      abort(1, "weft::nccl_communicator::all_gather: the output has " + std::to_string(out.size()) +
                   " elements, not size x input = " + std::to_string(in.size() * static_cast<std::size_t>(size())));
    nccl(ncclAllGather(in.data(), out.data(), in.size(), detail::nccl_type<T>(), s_->comm, s_->stream),
         "ncclAllGather");
  }
  template <detail::nccl_scalar T>
  void broadcast(std::span<T> inout, int root) {
    nccl(ncclBroadcast(inout.data(), inout.data(), inout.size(), detail::nccl_type<T>(), root, s_->comm, s_->stream),
         "ncclBroadcast");
  }

  // ---- point to point (tags are not NCCL's: order on the stream pairs them) ----
  template <detail::nccl_scalar T>
  void send(std::span<const T> in, int peer, int /*tag*/ = 0) {
    nccl(ncclSend(in.data(), in.size(), detail::nccl_type<T>(), peer, s_->comm, s_->stream), "ncclSend");
  }
  template <detail::nccl_scalar T>
  void recv(std::span<T> out, int peer, int /*tag*/ = 0) {
    nccl(ncclRecv(out.data(), out.size(), detail::nccl_type<T>(), peer, s_->comm, s_->stream), "ncclRecv");
  }
  template <detail::nccl_scalar T>
  request isend(std::span<const T> in, int peer, int tag = 0) {
    send(in, peer, tag);
    return record();
  }
  template <detail::nccl_scalar T>
  request irecv(std::span<T> out, int peer, int tag = 0) {
    recv(out, peer, tag);
    return record();
  }
  /// Sends and receives between these two calls are posted together (a pipeline step's
  /// exchanges with both neighbours cannot deadlock on each other).
  void group_begin() { nccl(ncclGroupStart(), "ncclGroupStart"); }
  void group_end() { nccl(ncclGroupEnd(), "ncclGroupEnd"); }

  /// Waits on the host for everything enqueued so far.
  void synchronize() const { check_cuda(cudaStreamSynchronize(s_->stream), "cudaStreamSynchronize"); }
  /// A barrier: a one-element all-reduce, waited for.
  void barrier() {
    all_reduce(std::span<std::int32_t>(s_->scratch, 1), reduce_op::sum);
    synchronize();
  }
  /// Sub-groups of ranks with equal color, ordered by key (ncclCommSplit).
  nccl_communicator split(int color, int key) {
    ncclComm_t sub = nullptr;
    nccl(ncclCommSplit(s_->comm, color, key, &sub, nullptr), "ncclCommSplit");
    int r = 0, n = 0;
    nccl(ncclCommUserRank(sub, &r), "ncclCommUserRank");
    nccl(ncclCommCount(sub, &n), "ncclCommCount");
    return nccl_communicator(r, n, s_->device, sub, s_->stream, s_->abort);
  }
  /// One line, NCCL aborted (no collective waits on this rank any more), the job ended.
  [[noreturn]] void abort(int code, std::string_view msg) const {
    if (s_->comm) ncclCommAbort(s_->comm);
    s_->abort(code, msg);
    std::_Exit(code);  // the host world's abort does not return; this is for safety
  }
  /// Polls NCCL's asynchronous error (a peer gone, a network failure) and ends the job on one.
  void check_async() const {
    ncclResult_t async = ncclSuccess;
    if (ncclCommGetAsyncError(s_->comm, &async) == ncclSuccess && async != ncclSuccess && async != ncclInProgress)
      abort(1, std::string("weft::nccl_communicator: asynchronous NCCL error: ") + ncclGetErrorString(async));
  }
  /// A thread that, every second, polls check_async() and the stream: if work enqueued on the
  /// stream has not completed for `timeout`, it aborts NCCL and the job with one line.
  void start_watchdog(std::chrono::seconds timeout) {
    auto s = s_;
    s->watchdog_stop = false;
    s->watchdog = std::thread([s, timeout, self = *this] {
      auto last_progress = std::chrono::steady_clock::now();
      while (!s->watchdog_stop.load()) {
        std::this_thread::sleep_for(std::chrono::seconds(1));
        self.check_async();
        if (cudaStreamQuery(s->stream) == cudaSuccess) last_progress = std::chrono::steady_clock::now();
        else if (std::chrono::steady_clock::now() - last_progress > timeout)
          self.abort(1, "weft::nccl_communicator: an operation on rank " + std::to_string(s->rank) +
                            " has not completed in " + std::to_string(timeout.count()) +
                            " s; a peer has probably died. Aborting the job.");
      }
    });
  }

 private:
  struct state {
    int rank = 0, size = 1, device = 0;
    ncclComm_t comm = nullptr;
    cudaStream_t stream = nullptr;
    bool owns_stream = false;
    abort_fn abort;
    std::int32_t* scratch = nullptr;  // one device int for barrier()
    std::atomic<bool> watchdog_stop{true};
    std::thread watchdog;
    ~state() {
      watchdog_stop = true;
      if (watchdog.joinable()) watchdog.join();
      if (scratch) cudaFree(scratch);
      if (comm) ncclCommDestroy(comm);
      if (owns_stream && stream) cudaStreamDestroy(stream);
    }
  };

  nccl_communicator(int rank, int size, int device, ncclUniqueId id, cudaStream_t stream, abort_fn abort)
      : s_(std::make_shared<state>()) {
    s_->rank = rank, s_->size = size, s_->device = device, s_->abort = std::move(abort);
    check_cuda(cudaSetDevice(device), "cudaSetDevice");
    if (!stream) {
      check_cuda(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
      s_->owns_stream = true;
    }
    s_->stream = stream;
    check_cuda(cudaMalloc(&s_->scratch, sizeof(std::int32_t)), "cudaMalloc");
    nccl(ncclCommInitRank(&s_->comm, size, id, rank), "ncclCommInitRank");
  }
  nccl_communicator(int rank, int size, int device, ncclComm_t comm, cudaStream_t stream, abort_fn abort)
      : s_(std::make_shared<state>()) {
    s_->rank = rank, s_->size = size, s_->device = device, s_->comm = comm, s_->stream = stream;
    s_->abort = std::move(abort);
    check_cuda(cudaMalloc(&s_->scratch, sizeof(std::int32_t)), "cudaMalloc");
  }

  request record() {
    cudaEvent_t e = nullptr;
    check_cuda(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "cudaEventCreateWithFlags");
    check_cuda(cudaEventRecord(e, s_->stream), "cudaEventRecord");
    return request(this, e);
  }
  void nccl(ncclResult_t r, const char* what) const {
    if (r != ncclSuccess && r != ncclInProgress)
      abort(1, std::string("weft::nccl_communicator: ") + what + ": " + ncclGetErrorString(r));
  }
  void check_cuda(cudaError_t e, const char* what) const {
    if (e != cudaSuccess) abort(1, std::string("weft::nccl_communicator: ") + what + ": " + cudaGetErrorString(e));
  }

  std::shared_ptr<state> s_;
};

}  // namespace weft

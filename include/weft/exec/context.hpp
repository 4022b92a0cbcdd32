#pragma once
// ---- execution contexts: what an op runs on ----
// Every op takes a context first and is found through the context's type (ops/op.hpp), so a
// layer body is the same C++ for every backend and a backend adds its op bodies beside the
// host ones without editing a layer. A context is a small value that travels with the frame
// (model/layer.hpp): the host context is empty; a CUDA context (backend/cuda/context.cuh)
// will carry a stream, a cuBLASLt handle and the plan's workspace.
//
// The context lives in exec/ rather than backend/host/: model/ and ops/ both name it, and
// backend/ sits above them in the dependency order (core -> tensor -> model/ops -> ... ->
// backend). backend/<name>/ holds a backend's op bodies and its own context type.
#include "weft/tensor/space.hpp"  // host_space, memory_space, host_accessible_space

#include <concepts>

namespace weft {

/// The host backend: ops run on the calling thread (and its OpenMP team) over host memory.
/// Nothing inside; today's ops are its op bodies.
struct host_context {
  using memory_space = host_space;  ///< where the buffers given to its ops live
};

/// Satisfied by a context type: a copyable value naming the memory space its ops work on.
template <class C>
concept execution_context = std::copy_constructible<C> && requires { typename C::memory_space; } &&
                            memory_space<typename C::memory_space>;

/// The memory space a context's ops read and write.
template <execution_context C>
using context_space_t = typename C::memory_space;

/// Satisfied by contexts whose buffers host code may read (executors may look at a loss there).
template <class C>
concept host_execution_context = execution_context<C> && host_accessible_space<context_space_t<C>>;

}  // namespace weft

#pragma once
// ---- the layer concept and the frame a layer runs in ----
// A layer is a type. It publishes, at compile time:
//   in_width, out_width          the widths of its input and output rows; a row is one token,
//                                so activations are (batch, seq, width). in_width 0 = token ids.
//   param_count                  elements of its parameters (one contiguous block)
//   kept_count<B, S>             elements of the activations it keeps for backward
//   scratch_count<B, S>          elements of workspace it needs while running (a stack)
//   find_param(path)             constexpr offset of a parameter by dotted path, or npos
//   visit_params(prefix, base, f) calls f(param_info) for every parameter (names, shapes, roles)
// and, at run time, forward(frame, in, out) and backward(frame, in, dout, din). Backward
// ACCUMULATES into din and into the parameter gradients; the caller zeroes them.
#include "weft/core/fixed_string.hpp"  // fixed_string
#include "weft/comm/group.hpp"         // tp_group (the group interface sharded layers talk to)
#include "weft/exec/context.hpp"       // host_context, execution_context
#include "weft/model/param.hpp"        // param_list, role, init_context
#include "weft/ops/matmul.hpp"         // linear_weight_view
#include "weft/ops/views.hpp"          // packed_view

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace weft {

/// Not found (parameter path look-ups).
inline constexpr std::size_t npos_param = static_cast<std::size_t>(-1);

/// A parameter as seen at run time: what checkpoints, optimizers and reports need.
struct param_info {
  std::string name;                ///< dotted path, e.g. "h.0.attn.c_attn.weight"
  std::size_t offset = 0;          ///< element offset in the model's parameter block
  std::size_t size = 0;            ///< number of elements
  std::vector<std::size_t> shape;  ///< extents, in weft's storage order
  /// The names of its shape's axes, in the same order ("expert", "out", "in"): what a strategy
  /// part deals out is an axis of a name (expert_parallel: a leading "expert" axis).
  std::vector<std::string_view> axes;
  role tp_role = role::replicated;
  bool decay = false;              ///< weight decay applies
  export_layout export_as = export_layout::as_is;
  bool random_init = false;
  double init_constant = 0.0;
  double init_stddev = 0.0;
  /// Widths of the packed segments along the first axis (a fused q|k|v or gate|up weight and its
  /// bias), each cut separately by tensor parallelism; empty: one segment.
  std::vector<std::size_t> segments;
};


/// Called during backward when the gradients of every parameter at element offset >= `from`
/// (in the model's block) are final: compositions report it after each child. Data
/// parallelism uses it to start reducing gradient buckets while backward goes on.
struct grad_ready_hook {
  void (*fn)(void* context, std::size_t from) = nullptr;
  void* context = nullptr;
  explicit operator bool() const { return fn != nullptr; }
  void operator()(std::size_t from) const { fn(context, from); }
};

/// Where the copies of the model's block stack (its top-level repeat<>) find their parameters
/// and gradients when the rank does not hold them all (issue #7; data_parallel_step):
///   * parameters (ZeRO-3, `params_fn`): the layers before and after the stack stay resident;
///     one block at a time is gathered into a window, the next prefetched;
///   * gradients (ZeRO-2 and 3, `grads_fn` / `grads_done`): each block's backward writes into a
///     zeroed window, which is reduce-scattered into the ranks' gradient shards when the block's
///     backward ends.
/// The resident parameter (or gradient) block then has a hole of `size` elements at `begin`
/// (offsets in the model's block): what lies after the stack is `size` elements earlier in
/// memory (frame::child, frame::root_param and frame::root_grad account for it).
template <class T>
struct block_window_hook {
  /// Makes the parameters [offset, offset + count) of the model's block resident and returns
  /// where they are (valid until the next call); `next` (npos_param: none) is the block
  /// that will be asked for next, to fetch meanwhile. nullptr: the parameters are resident.
  T* (*params_fn)(void* context, std::size_t offset, std::size_t count, std::size_t next) = nullptr;
  /// A zeroed window for the gradients of block [offset, offset + count), valid until
  /// grads_done of the same block. nullptr: the gradients are resident.
  T* (*grads_fn)(void* context, std::size_t offset, std::size_t count) = nullptr;
  /// The block's backward has ended: its window holds this micro-batch's gradients.
  void (*grads_done)(void* context, std::size_t offset, std::size_t count) = nullptr;
  void* context = nullptr;
  std::size_t begin = 0;  ///< the stack's first parameter, in the model's block
  std::size_t size = 0;   ///< the stack's parameter elements
  bool windows_params() const { return params_fn != nullptr; }
  bool windows_grads() const { return grads_fn != nullptr; }
  explicit operator bool() const { return params_fn != nullptr || grads_fn != nullptr; }
  T* params(std::size_t offset, std::size_t count, std::size_t next) const { return params_fn(context, offset, count, next); }
  T* grads(std::size_t offset, std::size_t count) const { return grads_fn(context, offset, count); }
  void done(std::size_t offset, std::size_t count) const { grads_done(context, offset, count); }
  /// `offset` of the model's block, where the resident block holds it (past the hole: earlier).
  std::size_t resident(std::size_t offset) const { return offset >= begin + size ? offset - size : offset; }
};

/// Where one layer's parameters, gradients, kept activations and workspace are, for one
/// micro-batch of B sequences of S tokens in element type T. `Root` is the whole model (tied
/// parameters are found through it). `Ctx` is the execution context every op of the layer is
/// called with, first: `ops::gelu_forward<F::rows * C>(f.ctx, view<F::rows, C>(f, out), view<F::rows, C>(f, in))` (exec/context.hpp).
template <class T, std::size_t B, std::size_t S, class Root, execution_context Ctx = host_context>
struct frame {
  using value_type = T;
  using root_type = Root;
  using context_type = Ctx;
  static constexpr std::size_t batch = B;
  static constexpr std::size_t seq = S;
  static constexpr std::size_t rows = B * S;  ///< tokens in the micro-batch

  T* params = nullptr;   ///< this layer's parameter block
  T* grads = nullptr;    ///< its gradient block (nullptr: forward only)
  T* kept = nullptr;     ///< its kept activations
  T* scratch = nullptr;  ///< top of the workspace stack
  T* root_params = nullptr;
  T* root_grads = nullptr;
  const std::int32_t* tokens = nullptr;  ///< (batch, seq) token ids
  grad_ready_hook grad_ready{};          ///< optional, see grad_ready_hook
  tp_group* tp = nullptr;                ///< tensor-parallel group of sharded layers (nullptr: none)
  Ctx ctx{};                             ///< where the ops run (a small handle; children share it)
  std::size_t poff = 0;                  ///< element offset of `params` in the model's block
  block_window_hook<T> window{};         ///< optional: the block stack's parameters / gradients come through it
  /// Index of the block this frame runs in, in the model's block stack: repeat<N, Block, First>
  /// sets First + i for copy i (a pipeline stage's repeat carries the model-wide index), children
  /// inherit it; 0 outside a stack. Layers whose form varies by depth read it
  /// (local_global_attention: Gemma 3's local and global layers).
  std::size_t layer = 0;
  /// A token id whose embedding row gets no gradient from its lookups (torch's nn.Embedding
  /// padding_idx: a Hugging Face config's pad_token_id, training_step::set_padding_token); -1: none.
  std::int64_t padding_token = -1;

  /// Element offset of this layer's parameter block in the model's block (carried, not
  /// computed from addresses: a windowed block's parameters are not at root_params + offset).
  std::size_t param_offset() const { return poff; }
  /// The model's parameter at element offset `offset` of its block (a tied weight): root_params
  /// + offset, less the window's hole when it lies after the block stack.
  T* root_param(std::size_t offset) const {
    return root_params + (window.windows_params() ? window.resident(offset) : offset);
  }
  /// Its gradient (nullptr when the frame has none), as root_param.
  T* root_grad(std::size_t offset) const {
    return root_grads ? root_grads + (window.windows_grads() ? window.resident(offset) : offset) : nullptr;
  }
  /// Reports that the gradients of this layer's block and everything after it are final.
  void report_grads_final() const {
    if (grad_ready && grads) grad_ready(param_offset());
  }

  /// The frame of a child whose blocks start at the given offsets.
  constexpr frame child(std::size_t param_offset, std::size_t kept_offset, std::size_t scratch_offset) const {
    frame f = *this;
    f.poff = poff + param_offset;
    f.params = params + param_offset;
    f.grads = grads ? grads + param_offset : nullptr;
    // A child after the block stack whose parent starts before its end: the resident block
    // has no room for the stack (block_window_hook), so what follows it sits earlier.
    if (window && poff < window.begin + window.size && f.poff >= window.begin + window.size) {
      if (window.windows_params()) f.params -= window.size;
      if (window.windows_grads() && f.grads) f.grads -= window.size;
    }
    f.kept = kept + kept_offset;
    f.scratch = scratch + scratch_offset;
    return f;
  }

  /// The same blocks seen with `S2` tokens per sequence: sequence parallelism switches between a
  /// rank's sequence shard and the whole sequence (model/tensor_parallel.hpp).
  template <std::size_t S2>
  frame<T, B, S2, Root, Ctx> resequenced() const {
    frame<T, B, S2, Root, Ctx> f;
    f.params = params;
    f.grads = grads;
    f.kept = kept;
    f.scratch = scratch;
    f.root_params = root_params;
    f.root_grads = root_grads;
    f.tokens = tokens;
    f.grad_ready = grad_ready;
    f.tp = tp;
    f.ctx = ctx;
    f.poff = poff;
    f.window = window;
    f.layer = layer;
    f.padding_token = padding_token;
    return f;
  }
};

/// The memory space of a frame's buffers: its context's.
template <class F>
using frame_space_t = context_space_t<typename F::context_type>;

/// How a layer hands a buffer to an op: a dense row-major view of extents E... at `p`, in the
/// memory of the frame's context (ops/views.hpp), `ops::gelu_forward<F::rows * C>(f.ctx,
/// view<F::rows, C>(f, out), view<F::rows, C>(f, in))`. The op checks the extents, the layout
/// and the space against what it takes.
template <std::size_t... E, class F, class P>
constexpr auto view(const F&, P* p) noexcept {
  return packed_view<frame_space_t<F>, E...>(p);
}

/// The (In, Out) view of a weight stored (Out, In) like torch's nn.Linear (ops/matmul.hpp).
template <std::size_t In, std::size_t Out, class F, class P>
constexpr auto linear_weight(const F&, P* p) noexcept {
  return ops::linear_weight_view<In, Out, frame_space_t<F>>(p);
}

namespace detail {
/// The window of a block stack (repeat<>, recomputed<repeat<>>) whose `stack_params` parameters
/// start at frame `f`: whether the frame's block_window_hook is over it, and the calls each copy
/// makes — its parameters before it runs (naming the copy that runs next), a zeroed gradient
/// window before its backward, handed back after it.
template <class F>
struct stack_window {
  const F& f;
  bool on;
  stack_window(const F& frame, std::size_t stack_params)
      : f(frame), on(frame.window && frame.param_offset() == frame.window.begin && frame.window.size == stack_params) {}
  void params(F& cf, std::size_t count, std::size_t next) const {
    if (on && f.window.windows_params()) cf.params = f.window.params(cf.poff, count, next);
  }
  /// True when the copy's gradients went to a window (then done() must follow its backward).
  bool grads(F& cf, std::size_t count) const {
    if (!on || !f.window.windows_grads() || !f.grads) return false;
    cf.grads = f.window.grads(cf.poff, count);
    return true;
  }
  void done(const F& cf, std::size_t count) const { f.window.done(cf.poff, count); }
};

struct layer_probe_root {
  static constexpr std::size_t find_param(std::string_view) { return npos_param; }
};
using probe_frame = frame<double, 1, 1, layer_probe_root>;
struct param_sink {  // a visit_params callback that ignores what it is given
  void operator()(const param_info&) const {}
};
}  // namespace detail

/// A model building block (see the top of this file for the contract). Compositions diagnose a
/// type that is not one member by member (model/layer_check.hpp).
template <class L>
concept layer = requires(const detail::probe_frame& f, const double* in, double* out, std::string_view path,
                         const std::string& prefix, const init_context& ic) {
  { L::in_width } -> std::convertible_to<std::size_t>;
  { L::out_width } -> std::convertible_to<std::size_t>;
  { L::param_count } -> std::convertible_to<std::size_t>;
  { L::template kept_count<1, 1> } -> std::convertible_to<std::size_t>;
  { L::template scratch_count<1, 1> } -> std::convertible_to<std::size_t>;
  { L::find_param(path) } -> std::convertible_to<std::size_t>;
  L::visit_params(prefix, std::size_t{0}, ic, detail::param_sink{});
  L::forward(f, in, out);
  L::backward(f, in, in, out);
};

/// A whole model from token ids to logits, with the facts plans and FLOP counts need.
template <class M>
concept language_model = layer<M> && requires {
  { M::vocab_size } -> std::convertible_to<std::size_t>;
  { M::context_length } -> std::convertible_to<std::size_t>;
  { M::depth } -> std::convertible_to<std::size_t>;
  { M::width } -> std::convertible_to<std::size_t>;
  { M::heads } -> std::convertible_to<std::size_t>;
  { M::lookup_param_count } -> std::convertible_to<std::size_t>;
} && (M::in_width == 0) && (M::out_width == M::vocab_size);

/// Base of layers that own a flat list of parameters (no children).
template <class Params>
struct leaf_layer {
  using params = Params;
  static constexpr std::size_t param_count = Params::size;

  static constexpr std::size_t find_param(std::string_view path) {
    const std::size_t o = Params::find(path);
    return o == Params::npos ? npos_param : o;
  }

  template <class F>
  static void visit_params(const std::string& prefix, std::size_t base, const init_context& ic, F&& f) {
    Params::for_each([&](auto p, std::size_t off) {
      using P = decltype(p);
      param_info i;
      i.name = prefix + std::string(P::name.view());
      i.offset = base + off;
      i.size = P::size;
      i.shape.assign(P::shape_type::extents.begin(), P::shape_type::extents.end());
      i.axes.assign(P::shape_type::names.begin(), P::shape_type::names.end());
      i.tp_role = P::tp_role;
      i.decay = P::decay;
      i.export_as = P::export_as;
      i.random_init = P::init_type::random;
      i.init_constant = P::init_type::constant;
      i.init_stddev = P::init_type::stddev(ic);
      f(i);
    });
  }
};

/// Base of layers without parameters.
struct stateless_layer : leaf_layer<param_list<>> {};

}  // namespace weft

#pragma once
// ---- ep_moe_mlp: one expert-parallel rank's mixture of experts, as a layer ----
// ep_moe_mlp<Moe, EP> is moe_expert_parallel<Moe, EP> (model/moe_expert_parallel.hpp) behind
// the `layer` contract, so that a whole model built with it (moe_gpt<cfg, ep_moe_mlp<…>>) is
// planned by plan<> with this rank's share of the experts (E/EP of them) and trained by the
// ordinary single-rank step. Its expert group is the one bound on the calling thread
// (bind_expert_group, model/expert_group.hpp); forward and backward throw without one.
// Parameters, with this rank's shapes:
//   gate.weight (expert E, in), experts.up_proj or experts.gate_up_proj (expert E/EP, ·, in),
//   experts.down_proj (expert E/EP, out, ffn), shared_expert.… (whole)
// What the caller does with the gradients (expert_parallel_local's or expert_parallel_step's job;
// plan<> swaps moe_mlp for this form under a strategy with expert_parallel<"ep">,
// parallel/expert_parallel.hpp):
// `experts.*` sum over data parallelism only, everything else over data x expert parallelism
// (is_expert_parameter tells them apart: a leading "expert" axis).
#include "weft/core/shape.hpp"                  // shape, axis
#include "weft/model/expert_group.hpp"          // expert_group, bound_expert_group
#include "weft/model/layer.hpp"                 // leaf_layer, npos_param, param_info
#include "weft/model/moe.hpp"                   // moe_mlp
#include "weft/model/moe_expert_parallel.hpp"   // moe_expert_parallel
#include "weft/model/param.hpp"                 // param, param_list

#include <cstddef>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>

namespace weft {

/// The axis expert parallelism deals out: a parameter whose leading axis has this name holds one
/// slice per expert, and each expert-parallel rank holds a block of them (moe_mlp's experts are
/// shape<axis<"expert", E>, …>). Typed, not guessed from the parameter's name: a user layer's
/// experts are dealt out when their shape says so, and a parameter merely called "experts" is not.
inline constexpr std::string_view expert_axis_name = "expert";
/// Whether a parameter is an expert's (its leading axis is expert_axis_name), held by one
/// expert-parallel rank.
inline bool is_expert_parameter(const param_info& p) { return !p.axes.empty() && p.axes.front() == expert_axis_name; }

/// moe_mlp `Moe` on one rank of an expert-parallel group of EP ranks, as a layer.
template <class Moe, std::size_t EP>
struct ep_moe_mlp {
  using impl = moe_expert_parallel<Moe, EP>;
  using moe_type = Moe;
  static constexpr std::size_t ep = EP;
  static constexpr std::size_t C = Moe::width, E = Moe::experts, El = impl::El, F = Moe::ffn, H1 = Moe::expert_in;
  static constexpr std::size_t width = C, experts = E, local_experts = El, top_k = Moe::top_k, ffn = F,
                               expert_in = H1;
  static constexpr double aux_alpha = Moe::aux_alpha;
  using shared_type = typename Moe::shared_type;
  static constexpr bool has_shared = Moe::has_shared;
  static constexpr std::string_view structure_name = "ep_moe_mlp";
  /// Tensor parallelism runs it whole on every rank (tp_shard, parallel/tensor_parallel.hpp): its
  /// expert group is then the ranks with the same tp index.
  static constexpr bool tp_replicated = true;

  using w1_param = std::conditional_t<
      Moe::swiglu, param<"experts.gate_up_proj", shape<axis<"expert", El>, axis<"out", H1>, axis<"in", C>>, role::replicated, init::normal<20>>,
      param<"experts.up_proj", shape<axis<"expert", El>, axis<"out", H1>, axis<"in", C>>, role::replicated, init::normal<20>>>;
  using params = param_list<param<"gate.weight", shape<axis<"out", E>, axis<"in", C>>, role::replicated, init::normal<20>>, w1_param,
                            param<"experts.down_proj", shape<axis<"expert", El>, axis<"out", C>, axis<"in", F>>,
                                  role::replicated, init::normal_residual<20>>>;
  static_assert(params::size == impl::own_param_count);

  static constexpr std::size_t in_width = C, out_width = C;
  static constexpr std::size_t own_param_count = impl::own_param_count;
  static constexpr std::size_t param_count = impl::param_count;
  template <std::size_t B, std::size_t S>
  static constexpr std::size_t kept_count = impl::template kept_count<B, S>;
  template <std::size_t B, std::size_t S>
  static constexpr std::size_t scratch_count = impl::template scratch_count<B, S>;

  static constexpr std::size_t find_param(std::string_view path) {
    const std::size_t o = params::find(path);
    if (o != params::npos) return o;
    if constexpr (has_shared) {
      constexpr std::string_view prefix = "shared_expert.";
      if (path.substr(0, prefix.size()) == prefix) {
        const std::size_t s = shared_type::find_param(path.substr(prefix.size()));
        return s == npos_param ? npos_param : own_param_count + s;
      }
    }
    return npos_param;
  }
  template <class Fn>
  static void visit_params(const std::string& prefix, std::size_t base, const init_context& ic, Fn&& f) {
    leaf_layer<params>::visit_params(prefix, base, ic, f);
    if constexpr (has_shared) shared_type::visit_params(prefix + "shared_expert.", base + own_param_count, ic, f);
  }

  template <class Fr>
  static void forward(const Fr& f, const typename Fr::value_type* in, typename Fr::value_type* out) {
    impl::forward(f, group(), in, out);
  }
  template <class Fr>
  static void backward(const Fr& f, const typename Fr::value_type* in, const typename Fr::value_type* dout,
                       typename Fr::value_type* din) {
    impl::backward(f, group(), in, dout, din);
  }

 private:
  static expert_group& group() {
    expert_group* g = bound_expert_group();
    if (g == nullptr)
      throw std::logic_error("weft::ep_moe_mlp: no expert group is bound on this thread. Bind one with weft::bind_expert_group around the step.");
    return *g;
  }
};

}  // namespace weft

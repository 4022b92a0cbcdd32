#pragma once
// ---- MLPs: GELU (GPT-2) and SwiGLU (LLaMA) ----
#include "weft/model/gelu.hpp"        // gelu
#include "weft/model/linear.hpp"      // linear, packed
#include "weft/model/named.hpp"       // named
#include "weft/model/sequential.hpp"  // sequential
#include "weft/model/swiglu.hpp"      // swiglu, geglu

#include <cstddef>

namespace weft {

/// width -> F (column-parallel) -> GELU -> width (row-parallel). Names: c_fc, c_proj. `Form`: the
/// GELU's (tanh, GPT-2's, by default; gelu_form::erf for GPT-NeoX and BERT).
template <std::size_t C, std::size_t F, bool Bias = true, export_layout Export = export_layout::as_is,
          gelu_form Form = gelu_form::tanh>
using gelu_mlp = sequential<named<"c_fc", linear<C, F, role::column, Bias, init::normal<20>, Export>>, gelu<F, Form>,
                            named<"c_proj", linear<F, C, role::row, Bias, init::normal_residual<20>, Export>>>;

/// width -> [gate | up] (2F, column-parallel) -> silu(gate)·up -> width (row-parallel), no biases.
template <std::size_t C, std::size_t F>
using swiglu_mlp = sequential<named<"gate_up", linear<C, 2 * F, role::column, false, init::normal<20>,
                                                      export_layout::as_is, packed<F, F>>>,
                              swiglu<F>,
                              named<"down", linear<F, C, role::row, false, init::normal_residual<20>>>>;

/// width -> [gate | up] (2F, column-parallel) -> gelu(gate)·up -> width (row-parallel), no biases
/// (Gemma's MLP; the names of swiglu_mlp).
template <std::size_t C, std::size_t F>
using geglu_mlp = sequential<named<"gate_up", linear<C, 2 * F, role::column, false, init::normal<20>,
                                                     export_layout::as_is, packed<F, F>>>,
                             geglu<F>,
                             named<"down", linear<F, C, role::row, false, init::normal_residual<20>>>>;

}  // namespace weft

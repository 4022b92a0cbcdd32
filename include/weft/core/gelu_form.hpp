#pragma once
// ---- which GELU: GPT-2's tanh approximation or the exact erf form ----
// gelu<C, gelu_form::erf>, gelu_mlp<C, F, Bias, Export, gelu_form::erf>, ops::gelu_forward<N, Form>
// and the CUDA kernels take it; the formulas are in ops/gelu.hpp.

namespace weft {

/// tanh: 0.5 x (1 + tanh(sqrt(2/π) (x + 0.044715 x³))), GPT-2's (Hugging Face "gelu_new");
/// erf: 0.5 x (1 + erf(x / sqrt 2)), PyTorch's nn.GELU() (Hugging Face "gelu": GPT-NeoX/Pythia, BERT).
enum class gelu_form { tanh, erf };

}  // namespace weft

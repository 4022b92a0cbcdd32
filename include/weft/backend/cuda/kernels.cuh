#pragma once
// ---- every launcher of weft's own CUDA kernels (backend/cuda/kernels/) ----
// The kernels' phase code is in kernels/<op>.hpp (plain C++, emulated on the host by the
// kernel tests); kernels/<op>.cuh holds the launchers: stream, pointers, integers.
#include "weft/backend/cuda/kernels/adamw.cuh"          // launch_adamw
#include "weft/backend/cuda/kernels/attention.cuh"      // launch_flash_attention_forward (scalar form)
#include "weft/backend/cuda/kernels/attention_rows.cuh" // launch_causal_softmax_rows, launch_attention_dscores_rows
#include "weft/backend/cuda/kernels/column_sum.cuh"     // launch_bias_backward
#include "weft/backend/cuda/kernels/cross_entropy.cuh"  // launch_softmax_cross_entropy_forward_backward
#include "weft/backend/cuda/kernels/elementwise.cuh"    // launch_gelu_*, launch_swiglu_*, launch_residual_*
#include "weft/backend/cuda/kernels/embedding.cuh"      // launch_embedding_*, launch_positional_backward
#include "weft/backend/cuda/kernels/flash_attention.cuh" // launch_mma_attention_forward/backward (tensor cores)
#include "weft/backend/cuda/kernels/layernorm.cuh"      // launch_layernorm_*, launch_residual_layernorm_forward
#include "weft/backend/cuda/kernels/memory.cuh"         // launch_cast, launch_fill, launch_zero, launch_accumulate, ...
#include "weft/backend/cuda/kernels/rmsnorm.cuh"        // launch_rmsnorm_*
#include "weft/backend/cuda/kernels/rope.cuh"           // launch_rope_*
#include "weft/backend/cuda/kernels/sum_squares.cuh"    // launch_sum_squares

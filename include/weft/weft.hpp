#pragma once
// weft: the umbrella header. Everything host-safe: it compiles with plain g++ and, for
// .cu translation units, with nvcc (CUDA-only parts live in .cuh files under backend/cuda).
#include "weft/config.hpp"    // WEFT_* macros
#include "weft/core.hpp"      // constants, names, axes, shapes, layouts, dtypes
#include "weft/tensor.hpp"    // tensor views, arenas
#include "weft/model.hpp"     // layers, compositions, gpt, llama
#include "weft/parallel.hpp"  // batch, plan
#include "weft/train.hpp"     // training_step, data, checkpoints
#include "weft/backend/host/blas_info.hpp"  // host_backend_summary, set_host_threads

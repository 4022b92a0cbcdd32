#pragma once
// weft: the umbrella header. Everything host-safe: it compiles with plain g++ and, for
// .cu translation units, with nvcc (CUDA-only parts live in .cuh files under backend/cuda).
#include "weft/config.hpp"    // WEFT_* macros
#include "weft/core.hpp"      // constants, names, axes, shapes, layouts, dtypes
#include "weft/tensor.hpp"    // tensor views, arenas
#include "weft/model.hpp"     // layers, compositions, gpt, llama
#include "weft/parallel.hpp"  // batch, plan
#include "weft/train.hpp"     // training_step, the single-file data loader
// Not here: weft/io.hpp (checkpoints, safetensors; needs nlohmann-json) and weft/data.hpp (shards, BPE).
#include "weft/backend/host/blas_info.hpp"  // host_backend_summary, set_host_threads
// Checkpoints and safetensors (weft/io.hpp) need nlohmann-json; included here where it is
// installed (CMake's weft target finds it), left out where it is not (a bare nvcc build).
#if __has_include(<nlohmann/json.hpp>)
#include "weft/io.hpp"  // save_checkpoint, load_checkpoint, safetensors
#endif

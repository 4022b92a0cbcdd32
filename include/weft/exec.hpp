#pragma once
// weft/exec: the executors — the execution context and its memory, the single-rank training step
// and its skeleton, and the parallel steps built on it (tensor, pipeline, expert and data
// parallelism with ZeRO 0-3) behind the one entry point make_training_step.
#include "weft/exec/context.hpp"                // host_context, op dispatch through a context
#include "weft/exec/memory.hpp"                 // context memory hooks, context_buffer
#include "weft/exec/step_skeleton.hpp"          // step_skeleton, train_options, step_metrics
#include "weft/exec/training_step.hpp"          // training_step
#include "weft/exec/tensor_parallel_step.hpp"   // tensor_parallel_step
#include "weft/exec/pipeline_step.hpp"          // pipeline_step
#include "weft/exec/expert_parallel_local.hpp"  // expert_parallel_local
#include "weft/exec/expert_parallel_step.hpp"   // expert_parallel_step (a hand-built ep model)
#include "weft/exec/data_parallel_step.hpp"     // data_parallel_step (ZeRO 0-3)
#include "weft/exec/distributed_step.hpp"       // distributed_step, make_training_step

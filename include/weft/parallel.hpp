#pragma once
// weft/parallel: batches, plans (and, as they land, meshes, strategies and schedules).
#include "weft/parallel/batch.hpp"         // batch, micro, seq
#include "weft/parallel/comm_volume.hpp"   // bytes communicated per step and axis
#include "weft/parallel/memory_model.hpp"  // per-rank memory under ZeRO / tp / sp / recompute
#include "weft/parallel/mesh.hpp"          // mesh
#include "weft/parallel/partition.hpp"     // parameters by role and stage
#include "weft/parallel/strategy.hpp"      // strategy, data_parallel, tensor_parallel, pipeline
#include "weft/parallel/expert_parallel.hpp"  // expert_parallel, ep_model_t
#include "weft/parallel/tensor_parallel.hpp"  // tp_shard_t, tensor_parallel_plan, shard maps
#include "weft/parallel/pipeline_stage.hpp"  // pipeline_stage_t
#include "weft/parallel/plan.hpp"          // plan, precision, memory_budget
#include "weft/parallel/schedule.hpp"      // gpipe, one_f_one_b, interleaved, make_schedule, verify
#include "weft/parallel/schedule_svg.hpp"  // write_schedule_svg

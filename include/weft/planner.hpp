#pragma once
// ---- weft/planner.hpp: the cost model, the strategy search and auto_strategy ----
// Not part of weft/weft.hpp: include it where a program plans (host-only, plain C++).
#include "weft/planner/auto_strategy.hpp"    // auto_strategy, global_batch
#include "weft/planner/cluster.hpp"          // cluster, presets
#include "weft/planner/collective_cost.hpp"  // axis_link, all_reduce_seconds
#include "weft/planner/gemm_efficiency.hpp"  // gemm_efficiency
#include "weft/planner/memory_cost.hpp"      // peak_stage_memory
#include "weft/planner/model_desc.hpp"       // model_desc, gpt_desc, llama_desc, describe
#include "weft/planner/run_cost.hpp"         // estimate_run
#include "weft/planner/search.hpp"           // search
#include "weft/planner/stack_profile.hpp"    // stack_profile, with_stack, calibrate
#include "weft/planner/step_cost.hpp"        // estimate_step

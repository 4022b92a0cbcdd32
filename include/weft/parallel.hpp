#pragma once
// weft/parallel: batches, plans (and, as they land, meshes, strategies and schedules).
#include "weft/parallel/batch.hpp"  // batch, micro, seq
#include "weft/parallel/plan.hpp"          // plan, precision, memory_budget
#include "weft/parallel/schedule.hpp"      // gpipe, one_f_one_b, interleaved, make_schedule, verify
#include "weft/parallel/schedule_svg.hpp"  // write_schedule_svg

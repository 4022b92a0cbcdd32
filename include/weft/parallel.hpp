#pragma once
// weft/parallel: batches, plans (and, as they land, meshes, strategies and schedules).
#include "weft/parallel/batch.hpp"  // batch, micro, seq
#include "weft/parallel/plan.hpp"   // plan, precision, memory_budget

#pragma once
// weft/core: compile-time integers, names, axes, shapes, layouts, dtypes, diagnostics.
#include "weft/core/axis.hpp"            // axis
#include "weft/core/constant.hpp"        // c, dynamic
#include "weft/core/diagnostics.hpp"     // diag::*
#include "weft/core/dtype.hpp"           // f64, f32, bf16, f16
#include "weft/core/fixed_string.hpp"    // fixed_string
#include "weft/core/layout.hpp"          // layout, mode
#include "weft/core/layout_algebra.hpp"  // coalesce_t, complement_t, compose_t, logical_divide_t, zipped_divide_t
#include "weft/core/layout_policy.hpp"   // row_major, column_major, strided, tiled, named_layout, divide
#include "weft/core/shape.hpp"           // shape

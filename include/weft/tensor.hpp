#pragma once
// weft/tensor: non-owning tensor views over host or device memory, and arenas.
#include "weft/tensor/arena.hpp"         // arena
#include "weft/tensor/arena_layout.hpp"  // buffer, arena_layout, basic_arena_layout
#include "weft/tensor/placement.hpp"     // place_blocks
#include "weft/tensor/space.hpp"         // host_space, device_space
#include "weft/tensor/tensor.hpp"        // tensor, make_tensor

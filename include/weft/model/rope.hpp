#pragma once
// ---- position encodings applied inside attention ----
#include <cstddef>

namespace weft {

/// No position encoding inside attention (GPT-2 adds learned positions at the input).
struct no_rope {
  static constexpr bool enabled = false;
};

/// Rotary position embedding on queries and keys (rotate-half convention, base 10000, as LLaMA).
struct rope {
  static constexpr bool enabled = true;
};

}  // namespace weft

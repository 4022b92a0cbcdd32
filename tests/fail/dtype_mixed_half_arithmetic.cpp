// expect: no match for .*operator\+.*weft::bf16.*weft::f16
// bf16 and f16 do not mix implicitly: the user converts one operand explicitly.
#include <weft/core/dtype.hpp>

auto sum = weft::bf16(1.0f) + weft::f16(1.0f);

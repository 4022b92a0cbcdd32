// expect: weft::linear: the packed<> segment widths do not add up to the out width
#include "weft/model/linear.hpp"
using namespace weft;
static_assert(linear<8, 6, role::column, true, init::normal<20>, export_layout::as_is, packed<2, 2>>::out_width == 6);

// expect: weft::plan: seq<S> is longer than the model's context
#include "weft/model/gpt.hpp"
#include "weft/parallel/plan.hpp"
using m = weft::gpt<weft::gpt_config<weft::vocab<16>, weft::context<8>, weft::width<8>, weft::heads<2>, weft::depth<1>>>;
static_assert(weft::plan<m, weft::batch<weft::micro<1>, weft::seq<9>>>::bytes_per_rank > 0);

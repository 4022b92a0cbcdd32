// expect: weft::lm_head: the tied parameter path names no parameter
#include "weft/model/lm_head.hpp"
#include "weft/model/named.hpp"
#include "weft/model/sequential.hpp"
#include "weft/model/token_embedding.hpp"
using namespace weft;
using m = sequential<named<"wte", token_embedding<16, 8>>, lm_head<16, 8, tied<"wte.wieght">>>;
void f(double* p, double* k, double* s, double* out) {
  frame<double, 1, 4, m> fr{};
  fr.params = fr.root_params = p;
  fr.kept = k;
  fr.scratch = s;
  m::forward(fr, nullptr, out);
}

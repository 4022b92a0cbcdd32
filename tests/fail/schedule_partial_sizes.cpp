// expect: weft::schedule: give all of P, M and V, or none
#include "weft/parallel/schedule.hpp"
weft::schedule<4, weft::dynamic, weft::dynamic> s;

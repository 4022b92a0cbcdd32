#pragma once
// ---- data_error: the one exception type of the data side of training ----
// Thrown only while opening or loading data (token files, text corpora, sampler set-up),
// never from a training step. The message is one line:
//   "weft::<entity>: '<file>': <what is wrong>."
#include <stdexcept>
#include <string>

namespace weft {

/// A data file or data range that cannot be used; `what()` names the file and the problem.
class data_error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace weft

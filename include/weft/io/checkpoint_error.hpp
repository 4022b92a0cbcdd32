#pragma once
// weft checkpoint_error: the one exception type of checkpoint reading and writing.

#include <stdexcept>

namespace weft {

/// Thrown when a checkpoint file cannot be written or read: I/O failures, corrupt or
/// truncated files, unknown dtypes, missing tensors. `what()` is one line that names the
/// file (where one is involved) and the problem, e.g.
/// `weft::safetensors_file: 'ckpt.safetensors': tensor 'wte': data_offsets [0, 96] end past the 64-byte data section (truncated file?).`
class checkpoint_error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace weft

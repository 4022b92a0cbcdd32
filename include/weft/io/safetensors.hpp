#pragma once
// weft safetensors: write and read checkpoints in the Hugging Face safetensors format.
// Shared layout and dtypes in safetensors_format.hpp, the writer and the reader each in its own header.
#include "weft/io/safetensors_format.hpp"  // safetensors_element, safetensors_float
#include "weft/io/safetensors_reader.hpp"  // safetensors_file, safetensors_tensor_info
#include "weft/io/safetensors_writer.hpp"  // safetensors_writer, safetensors_sink

#pragma once
// weft/io: files — safetensors (reader, writer, the shared format), checkpoints of one process
// or many (manifest, checksums, atomic save), checkpoint_error, and the JSON they are written in
// (nlohmann-json: weft/weft.hpp includes this header only where <nlohmann/json.hpp> is found, so
// that a bare nvcc build without it still compiles; the CMake target weft::weft finds it).
#include "weft/io/checkpoint_error.hpp"        // checkpoint_error
#include "weft/io/safetensors.hpp"             // safetensors_writer, safetensors_file
#include "weft/io/checkpoint.hpp"              // save_checkpoint, load_checkpoint, save_weights, load_weights
#include "weft/io/distributed_checkpoint.hpp"  // save_checkpoint / load_checkpoint of a distributed step

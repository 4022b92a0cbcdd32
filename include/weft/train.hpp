#pragma once
// weft/train: the training step, optimizer settings, data, checkpoints.
#include "weft/train/checkpoint.hpp"     // save_checkpoint, load_checkpoint, save_weights, load_weights
#include "weft/train/loader.hpp"         // text_corpus, token_file, split, batch_sampler, eval_batches
#include "weft/train/corpus.hpp"         // corpus::open (the one loader of a corpus by path)
#include "weft/train/batch_source.hpp"   // batch_source
#include "weft/train/optimizer.hpp"      // adamw, lr_schedule
#include "weft/train/preemption.hpp"     // preemption (SIGTERM/SIGINT at a step boundary)
#include "weft/train/stability.hpp"      // spike_guard
#include "weft/train/safetensors.hpp"    // safetensors_writer, safetensors_file
#include "weft/train/tokenizer.hpp"      // byte_tokenizer
#include "weft/train/data_parallel_step.hpp"    // data_parallel_step (ZeRO 0-3)
#include "weft/train/distributed_checkpoint.hpp"  // save_checkpoint / load_checkpoint of a distributed step
#include "weft/train/distributed_step.hpp"      // make_training_step (the one entry point, one process or many)
#include "weft/train/pipeline_step.hpp"         // pipeline_step
#include "weft/train/tensor_parallel_step.hpp"  // tensor_parallel_step
#include "weft/train/training_step.hpp"         // training_step, train_options, step_metrics

#pragma once
// weft/train: the executors (weft/exec.hpp), optimizer settings, stability and preemption, and (for
// existing code) the single-file data loader. Checkpoints and safetensors are in weft/io.hpp,
// the whole data pipeline in weft/data.hpp.
#include "weft/data/loader.hpp"         // text_corpus, token_file, split, batch_sampler, eval_batches
#include "weft/data/corpus.hpp"         // corpus::open (the one loader of a corpus by path)
#include "weft/data/batch_source.hpp"   // batch_source
#include "weft/data/tokenizer.hpp"      // byte_tokenizer
#include "weft/train/optimizer.hpp"      // adamw, lr_schedule
#include "weft/train/preemption.hpp"     // preemption (SIGTERM/SIGINT at a step boundary)
#include "weft/train/stability.hpp"      // spike_guard
#include "weft/train/loss_scaler.hpp"    // loss_scaler (f16)
#include "weft/exec.hpp"                 // the executors: training_step … make_training_step

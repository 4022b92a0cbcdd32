#pragma once
// ---- loader: the data side of training in one include ----
// Sources (token_file, token_buffer, text_corpus) -> token_view -> split ->
// batch_sampler (training, random windows) / eval_batches (validation, in order).
#include "weft/train/batch_sampler.hpp"  // batch_sampler, sampler_state
#include "weft/train/data_error.hpp"     // data_error
#include "weft/train/data_shard.hpp"     // data_shard
#include "weft/train/eval_batches.hpp"   // eval_batches
#include "weft/train/split.hpp"          // split, token_split
#include "weft/train/text_corpus.hpp"    // text_corpus, text_options
#include "weft/train/token_buffer.hpp"   // token_buffer
#include "weft/train/token_file.hpp"     // token_file, token_format
#include "weft/train/token_source.hpp"   // token_source
#include "weft/train/token_view.hpp"     // token_view
#include "weft/train/tokenizer.hpp"      // byte_tokenizer

#pragma once
// ---- loader: the data side of training in one include ----
// Sources (token_file, token_buffer, text_corpus) -> token_view -> split ->
// batch_sampler (training, random windows) / eval_batches (validation, in order).
#include "weft/data/batch_sampler.hpp"  // batch_sampler, sampler_state
#include "weft/data/data_error.hpp"     // data_error
#include "weft/data/data_shard.hpp"     // data_shard
#include "weft/data/eval_batches.hpp"   // eval_batches
#include "weft/data/split.hpp"          // split, token_split
#include "weft/data/text_corpus.hpp"    // text_corpus, text_options
#include "weft/data/token_buffer.hpp"   // token_buffer
#include "weft/data/token_file.hpp"     // token_file, token_format
#include "weft/data/token_source.hpp"   // token_source
#include "weft/data/token_view.hpp"     // token_view
#include "weft/data/tokenizer.hpp"      // byte_tokenizer

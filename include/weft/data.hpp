#pragma once
// weft/data: the data pipeline at scale — many memory-mapped token shards (nanoGPT and llm.c,
// uint16 and uint32), a shuffled stream that is the same at every data-parallel size, a
// prefetch thread, the shard writer, GPT-2's byte-level BPE; and the single-file readers: a token
// file, a text corpus with the byte tokenizer, the random-window sampler, evaluation batches
// (weft/data/loader.hpp), corpus::open, and the batch_source concept the steps read from.
#include "weft/data/loader.hpp"             // text_corpus, token_file, split, batch_sampler, eval_batches
#include "weft/data/corpus.hpp"             // corpus::open
#include "weft/data/batch_source.hpp"       // batch_source, fill_from
#include "weft/data/tokenizer.hpp"          // byte_tokenizer
#include "weft/data/bpe_tokenizer.hpp"      // bpe_tokenizer
#include "weft/data/gpt2_pretokenizer.hpp"  // gpt2_pretokenizer
#include "weft/data/prefetcher.hpp"         // prefetcher
#include "weft/data/shard_writer.hpp"       // shard_writer, shard_writer_options
#include "weft/data/sharded_sampler.hpp"    // sharded_sampler, stream_state, stream_order
#include "weft/data/token_shards.hpp"       // token_shards, shard_options

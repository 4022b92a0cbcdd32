#pragma once
// weft/data: the data pipeline at scale — many memory-mapped token shards (nanoGPT and llm.c,
// uint16 and uint32), a shuffled stream that is the same at every data-parallel size, a
// prefetch thread, the shard writer, and GPT-2's byte-level BPE. (The single-file loader, the
// byte tokenizer and the random-window sampler are in weft/train/loader.hpp.)
#include "weft/data/bpe_tokenizer.hpp"      // bpe_tokenizer
#include "weft/data/gpt2_pretokenizer.hpp"  // gpt2_pretokenizer
#include "weft/data/prefetcher.hpp"         // prefetcher
#include "weft/data/shard_writer.hpp"       // shard_writer, shard_writer_options
#include "weft/data/sharded_sampler.hpp"    // sharded_sampler, stream_state, stream_order
#include "weft/data/token_shards.hpp"       // token_shards, shard_options

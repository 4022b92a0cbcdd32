#!/usr/bin/env python3
"""Writes the token files of the out-of-vocabulary tests (issue 27) into OUT_DIR:
every id of each file is a byte (0..255, a 256-token model's vocabulary) except one, placed past
the first 65,536 tokens (where train_gpt used to stop looking):

  nanogpt_small_id.bin   nanoGPT raw uint16, 100,000 tokens, id 300 at token offset 81920
  nanogpt_large_id.bin   nanoGPT raw uint16, 100,000 tokens, id 60000 at token offset 81920
  llmc_u16_bad.bin       llm.c shard (magic 20240520, v1, uint16), id 1000 at offset 70000
  llmc_u32_bad.bin       llm.c shard (magic 20240801, v7, uint32), id 70123 at offset 81920
  short.txt              a text corpus of 10 bytes: shorter than one window of 65 tokens
Standard library only."""
import os
import struct
import sys

N = 100_000


def tokens(bad_at, bad):
    t = [(i * 7) % 256 for i in range(N)]
    t[bad_at] = bad
    return t


def llmc_header(magic, version, n):
    return struct.pack("<256i", magic, version, n, *([0] * 253))


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    files = {
        "nanogpt_small_id.bin": struct.pack(f"<{N}H", *tokens(81920, 300)),
        "nanogpt_large_id.bin": struct.pack(f"<{N}H", *tokens(81920, 60000)),
        "llmc_u16_bad.bin": llmc_header(20240520, 1, N) + struct.pack(f"<{N}H", *tokens(70000, 1000)),
        "llmc_u32_bad.bin": llmc_header(20240801, 7, N) + struct.pack(f"<{N}I", *tokens(81920, 70123)),
        "short.txt": b"too short\n",
    }
    for name, data in files.items():
        with open(os.path.join(out, name), "wb") as f:
            f.write(data)
    print(f"wrote {len(files)} files into {out}")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""tokenize_shards, byte-level, end to end (Python standard library only).

    tokenize_shards_check.py TOKENIZE_SHARDS WORKDIR

1. A directory of text files (nested, with a symbolic link and a file to skip) is turned into
   shards in every format x width; the shards must hold the bytes of the files in sorted path
   order, cut every --shard-tokens tokens, with llm.c headers / weft's .u32.bin names.
2. Bad command lines and bad inputs: non-zero exit status (2 for the command line, 1 for the
   data) and exactly one line on stderr naming the problem.
Exit status 0 when everything holds, 1 otherwise.
"""
import shutil
import struct
import subprocess
import sys
from pathlib import Path

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print(f"tokenize_shards_check: FAIL: {what}")


def run(exe, *args):
    return subprocess.run([exe, *map(str, args)], capture_output=True, text=True)


def read_shard(path, fmt, dtype):
    data = path.read_bytes()
    width = 2 if dtype == "u16" else 4
    code = "H" if dtype == "u16" else "I"
    if fmt == "llmc":
        magic, version, n = struct.unpack_from("<3i", data, 0)
        want = (20240520, 1) if dtype == "u16" else (20240801, 7)
        check((magic, version) == want, f"{path.name}: llm.c header {magic}, {version}, expected {want}")
        check(len(data) == 1024 + width * n, f"{path.name}: {len(data)} bytes for {n} tokens")
        return list(struct.unpack_from(f"<{n}{code}", data, 1024))
    check(len(data) % width == 0, f"{path.name}: size {len(data)} not a multiple of {width}")
    return list(struct.unpack(f"<{len(data) // width}{code}", data))


def main():
    if len(sys.argv) != 3:
        print(__doc__)
        return 2
    exe, work = sys.argv[1], Path(sys.argv[2])
    shutil.rmtree(work, ignore_errors=True)
    texts = work / "texts"
    (texts / "b_sub").mkdir(parents=True)
    (texts / "a.txt").write_bytes(b"It's a test.\nSecond line.\n")
    (texts / "b_sub" / "c.txt").write_bytes("caf\u00e9 \U0001F600 \t 123\n".encode("utf-8") * 40)
    (texts / "d.txt").write_bytes(bytes(range(256)))  # any byte is a token
    (texts / "e.dat").write_bytes(b"skipped by --skip-ext")
    (texts / "link.txt").symlink_to(texts / "a.txt")  # symbolic links are skipped
    files = [texts / "a.txt", texts / "b_sub" / "c.txt", texts / "d.txt"]
    expected = [b for f in files for b in f.read_bytes()]

    # ---- 1. every format x width ----
    for fmt in ("llmc", "nanogpt"):
        for dtype in ("u16", "u32"):
            out = work / f"out_{fmt}_{dtype}"
            r = run(exe, "--input", texts, "--output", out, "--format", fmt, "--dtype", dtype,
                    "--shard-tokens", 500, "--skip-ext", ".dat", "--prefix", "fw")
            check(r.returncode == 0, f"{fmt}/{dtype}: exit status {r.returncode}: {r.stderr.strip()}")
            if r.returncode != 0:
                continue
            check(f"tokenize_shards: 3 files" in r.stdout and "MB/s" in r.stdout, f"{fmt}/{dtype}: summary line: {r.stdout!r}")
            check("MB/s" in r.stderr and "100.0%" in r.stderr, f"{fmt}/{dtype}: progress bar: {r.stderr!r}")
            suffix = ".u32.bin" if (fmt, dtype) == ("nanogpt", "u32") else ".bin"
            names = sorted(p.name for p in out.iterdir())
            n_shards = (len(expected) + 499) // 500
            check(names == [f"fw_{k:06d}{suffix}" for k in range(n_shards)], f"{fmt}/{dtype}: shard names {names}")
            got = []
            for k, name in enumerate(names):
                toks = read_shard(out / name, fmt, dtype)
                check(len(toks) == (500 if k + 1 < n_shards else len(expected) - 500 * k),
                      f"{fmt}/{dtype}: {name} has {len(toks)} tokens")
                got += toks
            check(got == expected, f"{fmt}/{dtype}: tokens differ from the files' bytes")

    # ---- 2. errors: one line, non-zero exit ----
    def error(args, rc, needle):
        r = run(exe, *args)
        lines = r.stderr.strip().splitlines()
        check(r.returncode == rc, f"{args}: exit status {r.returncode}, expected {rc}")
        check(len(lines) == 1 and needle in lines[0] and lines[0].startswith("tokenize_shards: "),
              f"{args}: stderr {r.stderr!r} should be one line containing {needle!r}")

    error(["--frobnicate"], 2, "unknown option '--frobnicate'")
    error(["--input", texts], 2, "--output DIR is required")
    error(["--input", texts, "--output", work / "x", "--dtype", "u8"], 2, "--dtype is u16 or u32, not 'u8'")
    error(["--input", texts, "--output", work / "x", "--shard-tokens", "-5"], 2, "--shard-tokens needs a positive integer")
    error(["--input", texts, "--output", work / "x", "--tokenizer", "gpt2"], 2, "needs --vocab")
    error(["--input", work / "nonexistent", "--output", work / "x"], 1, "nonexistent': no such file or directory")
    error(["--input", texts, "--output", work / "x", "--tokenizer", "gpt2", "--vocab", work / "nope.json",
           "--merges", work / "nope.txt"], 1, "nope.json': cannot open the vocabulary file")
    error(["--input", texts, "--output", work / "out_llmc_u16", "--prefix", "fw"], 1, "already holds fw_000000.bin")
    (work / "empty").mkdir()
    (work / "empty" / "z.txt").write_bytes(b"")
    error(["--input", work / "empty", "--output", work / "y"], 1, "the input files are empty")
    error(["--input", texts, "--output", work / "z", "--ext", ".md"], 1, "no input files")

    print(f"tokenize_shards_check: {'FAILED: ' + str(len(failures)) if failures else 'all checks passed'}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Cross-check weft's safetensors reader and writer against the reference implementation.

Needs the PyPI packages `safetensors` and `numpy`.

  safetensors_crosscheck.py check-weft-file <path>
      <path> was written by `safetensors_write_sample write <path>`: load it with the reference
      library and check names, dtypes, shapes, values, metadata and the byte layout.
  safetensors_crosscheck.py write-reference <dir>
      write <dir>/reference_numpy.safetensors with safetensors.numpy.save_file and
      <dir>/reference_bf16.safetensors with safetensors.serialize_file (numpy has no bfloat16),
      for `safetensors_write_sample read <file>`.
  safetensors_crosscheck.py all <safetensors_write_sample binary> <dir>
      both directions: run the sample's write mode and check the file, then write the
      reference files and run the sample's read mode on each.

Exit status 0 when everything matches; otherwise the first failure is printed and the status is 1.
A missing `safetensors` or `numpy` module exits with status 77 (skip), or 1 under
WEFT_REQUIRE_REFERENCES=1 (CI: tests/common/reference_skip.py).
"""

import json
import os
import struct
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
from reference_skip import require  # noqa: E402  (a missing reference: skip, or fail in CI)
require(["numpy", "safetensors", "safetensors.numpy"], "python3 -m pip install safetensors numpy")
import numpy as np  # noqa: E402
import safetensors  # noqa: E402
import safetensors.numpy  # noqa: E402


class Mismatch(Exception):
    pass


def expect(cond, what):
    if not cond:
        raise Mismatch(what)


def expect_array(name, got, want):
    """Bitwise equality (so -0.0, NaN and rounding are all checked), plus dtype and shape."""
    want = np.asarray(want)
    expect(got.dtype == want.dtype, f"{name}: dtype {got.dtype}, expected {want.dtype}")
    expect(got.shape == want.shape, f"{name}: shape {got.shape}, expected {want.shape}")
    if got.dtype == np.bool_:
        expect(np.array_equal(got, want), f"{name}: values differ")
        return
    gb, wb = got.tobytes(), want.tobytes()
    if gb != wb:
        g, w = got.reshape(-1), want.reshape(-1)
        i = next(k for k in range(g.size) if g[k:k + 1].tobytes() != w[k:k + 1].tobytes())
        raise Mismatch(f"{name}[{i}] = {g[i]!r}, expected {w[i]!r}")


def bf16_round(x_f32):
    """float32 -> bfloat16 bits (uint16), round to nearest even; finite inputs only."""
    bits = np.asarray(x_f32, dtype=np.float32).view(np.uint32).astype(np.uint64)
    return ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)


def bf16_to_f32(bits_u16):
    return (np.asarray(bits_u16, dtype=np.uint16).astype(np.uint32) << 16).view(np.float32)


# ---- direction 1: weft writes, the reference reads ----

WEFT_METADATA = {
    "format": "pt",
    "weft.step": "1200",
    "note": "quote \" backslash \\ newline \n ctrl \x01 utf8 \u00e9 \u2713",
}


def weft_expected():
    """name -> (dtype, numpy array of the expected values; bf16 as uint16 bits)."""
    f16_src = np.array([1.0, -0.5, 65504.0, 2.0**-24, np.float32(1) / np.float32(3), 1e5, 3 * 2.0**-25, -0.0,
                        1 + 3 * 2.0**-12, 1 + 3 * 2.0**-11], dtype=np.float32)
    with np.errstate(over="ignore"):  # 1e5 -> inf is intended
        f16_rounded = f16_src.astype(np.float16)  # numpy's own float32 -> float16 rounding
    fc_src = np.arange(8)[:, None] * 10 + np.arange(3)[None, :]  # (out=8, in=3)
    return {
        "wte.weight": ("F32", (np.arange(20, dtype=np.float32) / np.float32(3)).reshape(5, 4)),
        "h.0.attn.bias": ("F64", (np.arange(6, dtype=np.float64) / 3.0).reshape(2, 3)),
        "h.0.attn.c_attn.weight": ("BF16", bf16_round(np.arange(48, dtype=np.float32) / np.float32(3)).reshape(4, 12)),
        "h.0.ln_1.bias": ("BF16", bf16_round(((np.arange(12) % 17) - 8) * 0.25)),
        "h.0.ln_1.weight": ("F16", f16_rounded),
        "h.0.mlp.c_fc.weight": ("F32", fc_src.T.astype(np.float32)),  # (in=3, out=8), transposed on write
        "tokens": ("I64", np.array([-2**63, -1, 0, 1, 50256, 2**40, 2**63 - 1], dtype=np.int64)),
        "positions": ("I32", np.array([[-5, 0], [7, 2**31 - 1]], dtype=np.int32)),
        "mask": ("U8", np.array([0, 128, 255], dtype=np.uint8)),
        "lr": ("F32", np.array(6e-4, dtype=np.float32)),
        "empty": ("F32", np.zeros((0, 4), dtype=np.float32)),
    }


def check_weft_file(path):
    expected = weft_expected()
    raw = open(path, "rb").read()

    # Byte layout, read by hand: header length, JSON, padding, alignment, coverage.
    (n,) = struct.unpack("<Q", raw[:8])
    expect(n % 8 == 0, f"header length {n} is not a multiple of 8")
    header_text = raw[8:8 + n].decode("utf-8")
    expect(header_text.startswith("{"), "header does not start with '{'")
    body = header_text.rstrip(" ")
    expect(body.endswith("}"), "header is not padded with spaces only")
    expect(len(header_text) - len(body) < 8, "more padding than needed")
    header = json.loads(body)
    expect(header.get("__metadata__") == WEFT_METADATA, f"__metadata__ = {header.get('__metadata__')!r}")
    sizes = {"F64": 8, "I64": 8, "F32": 4, "I32": 4, "BF16": 2, "F16": 2, "U8": 1}
    spans = sorted(tuple(v["data_offsets"]) for k, v in header.items() if k != "__metadata__")
    expect(spans[0][0] == 0 and spans[-1][1] == len(raw) - 8 - n, "tensors do not cover the data section")
    expect(all(a[1] == b[0] for a, b in zip(spans, spans[1:])), "tensors leave gaps or overlap")
    for k, v in header.items():
        if k != "__metadata__":
            expect(v["data_offsets"][0] % sizes[v["dtype"]] == 0, f"{k}: data not aligned to its element size")

    # The reference parser on the whole file (validates offsets itself; any dtype, raw bytes).
    views = dict(safetensors.deserialize(raw))
    expect(set(views) == set(expected), f"names {sorted(views)}, expected {sorted(expected)}")
    for name, (dtype, want) in expected.items():
        v = views[name]
        expect(v["dtype"] == dtype, f"{name}: dtype {v['dtype']}, expected {dtype}")
        expect(tuple(v["shape"]) == want.shape, f"{name}: shape {v['shape']}, expected {list(want.shape)}")
        if dtype == "BF16":
            got = np.frombuffer(bytes(v["data"]), dtype=np.uint16).reshape(v["shape"])
            expect_array(name, got, want)
            expect_array(name + " (as float32)", bf16_to_f32(got), bf16_to_f32(want))

    # The numpy front end. load_file() refuses files holding BF16 (numpy has no bfloat16), so
    # read through safe_open(framework="np") -- what load_file does -- for every other tensor.
    with safetensors.safe_open(path, framework="np") as f:
        expect(set(f.keys()) == set(expected), f"keys {sorted(f.keys())}")
        expect(f.metadata() == WEFT_METADATA, f"metadata {f.metadata()!r}")
        for name, (dtype, want) in expected.items():
            if dtype != "BF16":
                expect_array(name, f.get_tensor(name), want)
    print(f"reference library read {len(expected)} tensors and {len(WEFT_METADATA)} metadata entries of {path}")


# ---- direction 2: the reference writes, weft reads ----

REFERENCE_METADATA = {
    "format": "np",
    "source": "safetensors.numpy.save_file",
    "note": "quote \" backslash \\ newline \n ctrl \x01 utf8 \u00e9 \u2713",
}


def write_reference(directory):
    """Writes the two files; the values match reference_tensors() in safetensors_write_sample.cpp."""
    os.makedirs(directory, exist_ok=True)
    numpy_path = os.path.join(directory, "reference_numpy.safetensors")
    bf16_path = os.path.join(directory, "reference_bf16.safetensors")
    tensors = {
        "h.0.attn.c_attn.weight": (np.arange(48, dtype=np.float32) / np.float32(3)).reshape(4, 12),
        "h.0.attn.c_proj.bias": np.arange(5, dtype=np.float64) / 3.0 - 1.0,
        "wpe.weight": np.array([1.0, -0.5, 65504.0, 2.0**-24, 2.0**-14, 0.333251953125, -0.0, np.inf],
                               dtype=np.float16).reshape(2, 4),
        "tokens": np.array([-2**63, -1, 0, 50256, 2**40, 2**63 - 1], dtype=np.int64),
        "positions": np.array([[-5, 0, 7], [2**31 - 1, -2**31, 42]], dtype=np.int32),
        "i16": np.array([-32768, 32767], dtype=np.int16),
        "u16": np.array([0, 65535], dtype=np.uint16),
        "u32": np.array([0, 2**32 - 1], dtype=np.uint32),
        "u64": np.array([0, 2**64 - 1], dtype=np.uint64),
        "i8": np.array([-128, 127], dtype=np.int8),
        "mask": np.array([0, 128, 255], dtype=np.uint8),
        "flags": np.array([True, False, True, True]),
        "lr": np.array(6e-4, dtype=np.float32),
        "empty": np.zeros((0, 3), dtype=np.float32),
    }
    safetensors.numpy.save_file(tensors, numpy_path, metadata=REFERENCE_METADATA)

    # BF16 through the low-level writer: (i - 7) * 3/8 is exact in bfloat16.
    values = (np.arange(15, dtype=np.float32) - 7) * np.float32(0.375)
    bf16_bits = bf16_round(values).reshape(3, 5)
    expect(np.array_equal(bf16_to_f32(bf16_bits).reshape(-1), values), "bf16 test values are not exact")
    keep = {"ln_f.weight": np.ascontiguousarray(bf16_bits), "ln_f.bias": np.ascontiguousarray(values)}
    specs_dtype = {"ln_f.weight": ("bfloat16", "BF16"), "ln_f.bias": ("float32", "F32")}
    meta = {"writer": "safetensors.serialize_file"}
    if hasattr(safetensors, "TensorSpec"):  # safetensors >= 0.8
        specs = {k: safetensors.TensorSpec(dtype=specs_dtype[k][0], shape=list(a.shape),
                                           data_ptr=a.ctypes.data, data_len=a.nbytes) for k, a in keep.items()}
    else:  # older releases take plain dicts
        specs = {k: {"dtype": specs_dtype[k][0], "shape": list(a.shape), "data": a.tobytes()} for k, a in keep.items()}
    safetensors.serialize_file(specs, bf16_path, metadata=meta)
    keep_counts = list(keep)
    del keep

    # Make sure the reference agrees with itself before asking weft.
    views = dict(safetensors.deserialize(open(bf16_path, "rb").read()))
    expect(views["ln_f.weight"]["dtype"] == "BF16", "reference did not write BF16")
    return [(numpy_path, len(tensors), len(REFERENCE_METADATA)), (bf16_path, len(keep_counts), len(meta))]


def run_all(sample, directory):
    os.makedirs(directory, exist_ok=True)
    weft_path = os.path.join(directory, "weft_sample.safetensors")
    subprocess.run([sample, "write", weft_path], check=True)
    expect(not os.path.exists(weft_path + ".tmp"), "writer left its .tmp file behind")
    check_weft_file(weft_path)
    for path, tensors, metadata in write_reference(directory):
        r = subprocess.run([sample, "read", path], capture_output=True, text=True)
        sys.stdout.write(r.stdout)
        expect(r.returncode == 0, f"weft failed to read {path}: {r.stderr.strip()}")
        want = f"checked {tensors} tensors and {metadata} metadata entries"
        expect(want in r.stdout, f"weft read {path} but did not report '{want}'")
    print("safetensors cross-check: OK")


def main(argv):
    try:
        if len(argv) == 3 and argv[1] == "check-weft-file":
            check_weft_file(argv[2])
        elif len(argv) == 3 and argv[1] == "write-reference":
            for path, _, _ in write_reference(argv[2]):
                print(path)
        elif len(argv) == 4 and argv[1] == "all":
            run_all(argv[2], argv[3])
        else:
            print(__doc__, file=sys.stderr)
            return 2
    except Mismatch as e:
        print(f"MISMATCH: {e}", file=sys.stderr)
        return 1
    except subprocess.CalledProcessError as e:
        print(f"FAILED: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

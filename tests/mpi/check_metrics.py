#!/usr/bin/env python3
"""The metrics stream of train_distributed: one JSON object per step (docs/running_long_jobs.md).

Runs `mpirun -np N train_distributed` with NaN gradients on rank 0 in its 3rd step and the spike
guard on, then parses every line of --metrics FILE as JSON and checks the fields, the skipped step
(its NaN loss written as null) and the counters.
    check_metrics.py MPIEXEC -np N TRAIN_DISTRIBUTED FILE
"""
import json
import subprocess
import sys

mpiexec, np_flag, np, exe, path = sys.argv[1:6]
steps = 12
cmd = [mpiexec, np_flag, np, exe, "--strategy", "zero1", "--steps", str(steps), "--nan-rank", "0", "--nan-at", "3",
       "--spike-guard", "--metrics", path]
run = subprocess.run(cmd, capture_output=True, text=True, timeout=240)
print(run.stdout + run.stderr)
if run.returncode != 0:
    sys.exit(f"{' '.join(cmd)} exited with {run.returncode}")

with open(path) as f:
    rows = [json.loads(line) for line in f]  # every line must be one JSON object
fields = ["step", "loss", "grad_norm", "lr", "tokens_per_s", "skipped", "nonfinite", "spike", "skipped_total",
          "spikes", "rollbacks_total"]
errors = []
for r in rows:
    missing = [k for k in fields if k not in r]
    if missing:
        errors.append(f"missing {missing} in {r}")
skipped = [r for r in rows if r["skipped"]]
if len(rows) != steps + 1:
    errors.append(f"{len(rows)} lines for {steps} steps and 1 skipped step")
if len(skipped) != 1 or not skipped[0]["nonfinite"] or skipped[0]["loss"] is not None or skipped[0]["step"] != 2:
    errors.append(f"expected one non-finite skipped step after step 2, with loss null: {skipped}")
if rows and (rows[-1]["step"] != steps or rows[-1]["skipped_total"] != 1 or rows[-1]["rollbacks_total"] != 0):
    errors.append(f"last line: {rows[-1]}")
if any(b["step"] < a["step"] for a, b in zip(rows, rows[1:])):
    errors.append("the step count goes down")
if any(r["loss"] is not None and not (0 < r["loss"] < 10) for r in rows):
    errors.append("a loss outside (0, 10)")
if errors:
    sys.exit("\n".join(errors))
print(f"{len(rows)} JSON lines: {steps} steps, 1 skipped (NaN on rank 0), counters as expected")

#!/usr/bin/env python3
"""Reruns every `$ build/examples/plan_cluster ...` block of the planner docs and writes its output
back in place (after a change to the cost or memory model the walkthroughs would be stale).
The prose around the blocks is not touched: read the diff and update what it says.
  python3 tools/regen_walkthroughs.py [build dir] [doc ...]   (default: build, docs/planner_walkthroughs.md)"""
import pathlib
import re
import shlex
import subprocess
import sys

build = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else "build")
docs = sys.argv[2:] or ["docs/planner_walkthroughs.md"]
block = re.compile(r"(```text\n\$ (build/examples/plan_cluster[^\n]*)\n)(.*?)(```)", re.S)

for doc in docs:
    path = pathlib.Path(doc)
    text = path.read_text()

    def rerun(m):
        args = shlex.split(m.group(2))
        exe = build / "examples" / "plan_cluster"
        out = subprocess.run([str(exe)] + args[1:], capture_output=True, text=True, check=True).stdout
        return m.group(1) + out + ("" if out.endswith("\n") else "\n") + m.group(4)

    new, n = block.subn(rerun, text)
    path.write_text(new)
    print(f"{doc}: {n} blocks rerun")

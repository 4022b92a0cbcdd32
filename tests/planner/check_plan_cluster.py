#!/usr/bin/env python3
"""Runs plan_cluster with the given arguments and checks its exit status and output.
   check_plan_cluster.py MODE EXE ARGS...
MODE text: rc 0 and the report's sections; json: rc 0 and the JSON fields, consistent;
html: rc 0 and the HTML file has its four SVG charts; bad: rc != 0 and one line on stderr;
moe: text, and the chosen strategy names expert parallelism, ep > 1 dividing the experts;
calibrate: json with --calibrate T, and the fitted profile and the report reproduce T tokens/s.
With --flash among the arguments, json also checks that every strategy it names (chosen,
alternatives, scaling rows) has flash attention and no selective recompute (its twin under flash)."""
import json, os, re, subprocess, sys, tempfile
import xml.etree.ElementTree as ET

mode, exe, args = sys.argv[1], sys.argv[2], sys.argv[3:]
fail = []
def need(cond, what):
    if not cond:
        fail.append(what)

if mode == "html":
    fd, path = tempfile.mkstemp(suffix=".html"); os.close(fd)
    args = args + ["--html", path]
p = subprocess.run([exe] + args, capture_output=True, text=True, timeout=300)
if mode == "bad":
    need(p.returncode != 0, "a bad input must exit non-zero")
    lines = [l for l in p.stderr.splitlines() if l.strip()]
    need(len(lines) == 1 and lines[0].startswith("plan_cluster: "), f"one 'plan_cluster: ...' line on stderr, got {p.stderr!r}")
else:
    need(p.returncode == 0, f"exit status {p.returncode}: {p.stderr.strip()}")
if mode in ("text", "moe") and p.returncode == 0:
    for section in ["== one GPU alone", "== strategy on", "by bottleneck", "tokens/s, MFU", "Young/Daly", "== scaling out",
                    "== one monolithic machine", "verdict:"]:
        need(section in p.stdout, f"text output lacks '{section}'")
if mode == "calibrate" and p.returncode == 0:
    # --calibrate T --json with the layout pinned: the fitted profile reproduces T, and the report,
    # priced with it on the same layout, says T tokens/s
    j = json.loads(p.stdout)
    cal = j["stack"]["calibration"]
    t = float(args[args.index("--calibrate") + 1])
    need(cal is not None, "no calibration object")
    if cal is not None:
        need(abs(cal["predicted_after"] - t) <= 1e-3 * t, f"the fit predicts {cal['predicted_after']}, not {t}")
        need(abs(j["tokens_per_second"] - t) <= 1e-3 * t, f"the report says {j['tokens_per_second']} tokens/s, not {t}")
        need(j["stack"][cal["factor"]] == cal["fitted"], "the report's profile is not the fitted one")
        need(cal["predicted_before"] != cal["predicted_after"], "nothing was fitted")
    mode = "json"
if mode == "json" and p.returncode == 0:
    try:
        j = json.loads(p.stdout)
    except ValueError as e:
        j = None; fail.append(f"not one JSON object: {e}")
    if j is not None:
        for k in ["tp", "pp", "dp", "zero", "schedule", "microbatches", "recompute", "sequence_parallel", "memory_per_gpu_bytes",
                  "step_seconds", "mfu", "tokens_per_second", "days_to_train", "gpu_hours", "cost_usd", "expected_interruptions",
                  "checkpoint_interval_minutes", "breakdown", "alternatives"]:
            need(k in j and j[k] is not None, f"JSON lacks {k}")
        if not fail:
            gpus = j["cluster"]["gpus"]
            ep = j.get("ep", 1)  # expert-parallel ranks (mixtures of experts); each brings its own tokens
            cp = j.get("cp", 1)  # context-parallel ranks share the sequences of their group
            need(j["tp"] * j["pp"] * j["dp"] * ep * cp == gpus, "tp*pp*dp*ep*cp is not the GPU count")
            need(j["dp"] * ep * j["micro_batch"] * j["microbatches"] == j["batch"]["sequences"], "the batch is not covered")
            need(j["model"].get("experts", 0) == 0 and ep == 1 or ep >= 1 and j["model"]["experts"] % ep == 0,
                 "ep does not divide the experts (or a dense model has ep > 1)")
            need(j["strategy"].get("ep") == ep, "the strategy object's ep differs")
            need(0 < j["memory_per_gpu_bytes"] <= j["cluster"]["usable_bytes"], "memory per GPU is over the usable memory")
            need(abs(sum(b["seconds"] for b in j["breakdown"]) - j["step_seconds"]) <= 1e-6 * j["step_seconds"] + 1e-9,
                 "the breakdown does not add up to the step")
            need(0 < j["mfu"] < 1, "MFU out of (0, 1)")
            tps = j["batch"]["sequences"] * j["batch"]["seq"] / j["step_seconds"]
            need(abs(tps - j["tokens_per_second"]) <= 1e-3 * tps, "tokens/s is not batch tokens / step")
            need(j["days_to_train"] * 86400 >= j["tokens"] / j["tokens_per_second"] * 0.999, "wall time shorter than compute")
            need(abs(j["gpu_hours"] - gpus * j["days_to_train"] * 24) <= 1e-3 * j["gpu_hours"], "GPU-hours != GPUs x wall")
            need(all(a["step_seconds"] >= j["step_seconds"] for a in j["alternatives"]), "an alternative is faster than the choice")
            need(j["checkpoint_interval_minutes"] > 0, "no checkpoint interval")
            need(len(j["scaling"]) >= 1, "no scaling rows")
            flash = "--flash" in args
            named = [j["strategy"]] + [a["strategy"] for a in j["alternatives"]] + [r["strategy"] for r in j["scaling"] if r["feasible"]]
            need(j.get("flash_attention") == flash, f"flash_attention is not {flash}")
            need(all(st.get("flash_attention") == flash for st in named), f"a strategy's flash_attention is not {flash}")
            if flash:
                need(all(st["recompute"] != "selective" for st in named), "selective recompute priced under --flash")
if mode == "moe" and p.returncode == 0:
    m = re.search(r"^chosen: .*\bdp (\d+), ep (\d+),", p.stdout, re.M)
    e = re.search(r"^mixture of experts: (\d+) experts", p.stdout, re.M)
    need(e is not None, "the job does not say it is a mixture of experts")
    need(m is not None, "the chosen strategy does not name ep")
    if m and e:
        ep, experts = int(m.group(2)), int(e.group(1))
        need(ep > 1 and experts % ep == 0, f"ep {ep} is not > 1 dividing {experts} experts")
if mode == "html" and p.returncode == 0:
    html = open(path).read()
    os.remove(path)
    need(html.startswith("<!DOCTYPE html>") and html.rstrip().endswith("</html>"), "not a whole HTML document")
    need(html.count("<svg") >= 4, f"{html.count('<svg')} SVG charts, want 4")
    for chart in ["memory-chart", "breakdown-chart", "scaling-chart", "pipeline-chart"]:
        need(f'id="{chart}"' in html, f"no {chart}")
    need(html.count('class="mem"') >= 4, "memory bars missing")
    need(html.count('class="part"') == 10, "breakdown parts missing")  # cost_parts
    need('class="fwd"' in html and 'class="bwd"' in html, "pipeline timeline without forward/backward boxes")
    need('class="point"' in html, "scaling curve without points")
    for svg in re.findall(r"<svg.*?</svg>", html, re.S):
        try:
            ET.fromstring(svg)
        except ET.ParseError as e:
            fail.append(f"an SVG chart is not well-formed XML: {e}")
    need("<script" not in html and "http://" not in html.replace("http://www.w3.org/2000/svg", ""), "not self-contained")
for f in fail:
    print("FAIL:", f)
if fail:
    print(p.stdout[-2000:]); print(p.stderr[-2000:])
sys.exit(1 if fail else 0)

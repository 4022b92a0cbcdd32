#!/usr/bin/env python3
"""Preemption through the launcher (docs/running_long_jobs.md#preemption-through-the-launcher).

A signal goes to the launcher, never to a rank, in the middle of a step that lasts longer than
Open MPI's default kill timeout (1 s: --step-delay-ms 1500). Then: the exit status, the step
every rank stopped after, DIR/latest naming that step, and a --resume run that starts there.

    preempt_launcher.py CASE WEFT_MPIRUN MPIEXEC NP_FLAG TRAIN_DISTRIBUTED WORKDIR

CASE (what is signalled, and with what):
  sigterm     SIGTERM to tools/weft-mpirun (a scheduler)            -> exit 0, checkpoint
  ctrl_c      Ctrl-C typed on the terminal weft-mpirun runs in (a pseudo-terminal: SIGINT to
              its foreground process group)                        -> exit 0, checkpoint
  twice       SIGTERM twice to weft-mpirun, 6 s steps                -> the job ends at once (a
              few seconds, not the rest of the step), non-zero, no checkpoint of the step
  usr1        SIGUSR1 to mpirun itself (Slurm --signal=USR1@T)      -> exit 0, checkpoint
  mpirun_term SIGTERM to mpirun itself, kill timeout raised to 5 s  -> checkpoint; the status is
              Open MPI's (1: mpirun 4.1 ends a job it got SIGTERM for as aborted)
  mpirun_term_default  SIGTERM to mpirun with the default 1 s timeout: the bug of issue 27 (no
              checkpoint, exit 1) — not registered as a test; run by hand to see it fail
"""
import fcntl
import os
import re
import shutil
import signal
import subprocess
import sys
import termios
import threading
import time

case, weft_mpirun, mpiexec, np_flag, exe, work = sys.argv[1:7]
np = "2"
delay_ms = 1500       # one step: > 1.5 s, longer than mpirun's default kill timeout of 1 s
if case == "twice":
    delay_ms = 6000   # long enough that "at once" and "after the step" cannot be confused
bound_s = 30          # signal -> exit, generous on a loaded machine (a step + one save here)

shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)
ck = os.path.join(work, "ck")
metrics = os.path.join(work, "metrics.jsonl")
env = dict(os.environ)
env.pop("OMPI_MCA_odls_base_sigkill_timeout", None)
if case == "mpirun_term":
    env["OMPI_MCA_odls_base_sigkill_timeout"] = "5"

train = [exe, "--strategy", "dp", "--steps", "1000", "--checkpoint", ck, "--metrics", metrics,
         "--step-delay-ms", str(delay_ms)]
direct = case in ("usr1", "mpirun_term", "mpirun_term_default")
cmd = ([mpiexec, np_flag, np] if direct else [weft_mpirun, np_flag, np]) + train
if not direct:
    env["MPIRUN"] = mpiexec


def default_signals():  # the child starts with SIGINT/SIGTERM at their defaults, as from a shell
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


def fail(msg, out=""):
    print(out)
    sys.exit(f"preempt_launcher {case}: {msg}")


print("$", " ".join(cmd), flush=True)
if case == "ctrl_c":
    # weft-mpirun in a session of its own whose controlling terminal is a pseudo-terminal: a ^C
    # written to the master is turned into SIGINT for the foreground process group by the tty.
    master, slave = os.openpty()

    def on_terminal():
        default_signals()
        os.setsid()
        fcntl.ioctl(0, termios.TIOCSCTTY, 0)

    p = subprocess.Popen(cmd, stdin=slave, stdout=slave, stderr=slave, env=env, preexec_fn=on_terminal)
    os.close(slave)
    chunks = []

    def read_terminal():
        while True:
            try:
                d = os.read(master, 4096)
            except OSError:  # EIO: every process holding the terminal has gone
                return
            if not d:
                return
            chunks.append(d)

    reader = threading.Thread(target=read_terminal, daemon=True)
    reader.start()

    class terminal_output:  # p.communicate() for a process on the pseudo-terminal
        @staticmethod
        def communicate(timeout=None):
            p.wait(timeout=timeout)
            reader.join(10)
            return b"".join(chunks).decode(errors="replace").replace("\r\n", "\n"), None
else:
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
                         preexec_fn=default_signals)
    terminal_output = p
# Wait for two whole steps (so the ranks are past start-up and in their third), then half a step.
deadline = time.time() + 120
while True:
    lines = open(metrics).read().count("\n") if os.path.exists(metrics) else 0
    if lines >= (1 if case == "twice" else 2):
        break
    if p.poll() is not None or time.time() > deadline:
        p.kill()
        fail("the run ended or stalled before two steps", terminal_output.communicate()[0])
    time.sleep(0.05)
time.sleep(1 if case == "twice" else delay_ms / 2000)
sent = time.time()
if case == "twice":
    p.send_signal(signal.SIGTERM)
    time.sleep(0.3)
    p.send_signal(signal.SIGTERM)
elif case == "sigterm":
    p.send_signal(signal.SIGTERM)
elif case == "ctrl_c":
    os.write(master, b"\x03")  # Ctrl-C
elif case == "usr1":
    p.send_signal(signal.SIGUSR1)
else:
    p.send_signal(signal.SIGTERM)
try:
    out, _ = terminal_output.communicate(timeout=bound_s + 60)
except subprocess.TimeoutExpired:
    p.kill()
    fail(f"still running {bound_s + 60} s after the signal", terminal_output.communicate()[0])
took = time.time() - sent
rc = p.returncode
print(out)
print(f"exit status {rc}, {took:.1f} s after the signal", flush=True)

if case == "twice":  # ended at once: well before the 6 s step in flight could end, not 0
    if rc == 0 or took > 4:
        fail(f"two SIGTERMs: exit status {rc} after {took:.1f} s; expected non-zero within 4 s")
    if "every rank stops after step" in out:
        fail("two SIGTERMs: the ranks went on to finish the step")
    print(f"preempt_launcher twice: ended {took:.1f} s after the first signal, exit {rc}")
    sys.exit(0)

m = re.search(r"every rank stops after step (\d+) \(steps (\d+)\.\.(\d+)\)", out)
if not m:
    fail("no 'every rank stops after step N' line: the ranks did not stop together")
stop = int(m.group(1))
if stop < 2:
    fail(f"stopped after step {stop}, before the signal")
if not re.search(rf"saved \S*step-0*{stop}\b", out):
    fail(f"no checkpoint of step {stop} saved")
try:
    latest = open(os.path.join(ck, "latest")).read().strip()
except OSError:
    fail("no DIR/latest")
if not re.fullmatch(rf"step-0*{stop}", latest):
    fail(f"DIR/latest names {latest}, not step {stop}")
if case == "mpirun_term":
    # Open MPI 4.1: the ranks got SIGTERM 5 s after mpirun (SIGKILL 10 s after); mpirun's status is 1.
    print(f"mpirun's own exit status: {rc} (Open MPI 4.1 reports a job it got SIGTERM for as aborted)")
else:
    if rc != 0:
        fail(f"exit status {rc}, expected 0")
    if took > bound_s:
        fail(f"{took:.1f} s from the signal to the exit, more than {bound_s} s")

# The checkpoint loads and training continues from it.
resume = [mpiexec, np_flag, np, exe, "--strategy", "dp", "--steps", str(stop + 2), "--resume", ck]
print("$", " ".join(resume), flush=True)
r = subprocess.run(resume, capture_output=True, text=True, timeout=180, env=env)
print(r.stdout + r.stderr)
if r.returncode != 0:
    fail(f"--resume exited with {r.returncode}")
if f"resumed from {ck} at step {stop}" not in r.stdout:
    fail(f"--resume did not start at step {stop}")
print(f"preempt_launcher {case}: stopped after step {stop}, exit {rc}, {took:.1f} s; resumed from step {stop}")

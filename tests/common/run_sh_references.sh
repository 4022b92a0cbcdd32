#!/usr/bin/env bash
# run.sh's Python step when the references cannot be had: a python3 on which every import fails
# (so pip cannot install either) and a cmake that only says the build was reached.
#   run_sh_references.sh ROOT required   WEFT_REQUIRE_REFERENCES=1: must stop (1) before the build
#   run_sh_references.sh ROOT ci         CI=true, the variable unset: the same
#   run_sh_references.sh ROOT partial    neither: one line saying the cross-checks will be
#                                        Skipped, and on to the build
# Exit 0 when run.sh behaved so; 1 otherwise, with its output; 77 on a machine that lacks
# run.sh's Debian packages (run.sh stops before the Python step there).
set -u
root=$1
case_=$2
stub=$(mktemp -d)
trap 'rm -rf "$stub"' EXIT
printf '#!/bin/sh\nexit 1\n' >"$stub/python3"
printf '#!/bin/sh\necho "stub cmake: the build was reached" >&2\nexit 3\n' >"$stub/cmake"
chmod +x "$stub/python3" "$stub/cmake"

case "$case_" in
  required) out=$(env -u CI WEFT_REQUIRE_REFERENCES=1 PATH="$stub:$PATH" bash "$root/run.sh" test 2>&1) ;;
  ci) out=$(env -u WEFT_REQUIRE_REFERENCES CI=true PATH="$stub:$PATH" bash "$root/run.sh" test 2>&1) ;;
  partial) out=$(env -u CI WEFT_REQUIRE_REFERENCES=0 PATH="$stub:$PATH" bash "$root/run.sh" test 2>&1) ;;
  *) echo "usage: run_sh_references.sh ROOT required|ci|partial" >&2; exit 2 ;;
esac
rc=$?
echo "$out"
echo "run.sh test: exit status $rc"
if grep -q "missing Debian packages" <<<"$out"; then
  echo "SKIP: run.sh's Debian packages are not installed here"
  exit 77
fi
fail() { echo "FAILED: $*"; exit 1; }
if [ "$case_" = partial ]; then
  grep -q "their cross-checks will be Skipped" <<<"$out" || fail "no line saying the cross-checks will be Skipped"
  grep -q "the build was reached" <<<"$out" || fail "run.sh did not go on to the build"
else
  [ "$rc" = 1 ] || fail "exit status $rc, expected 1"
  grep -q "WEFT_REQUIRE_REFERENCES=1: stopping" <<<"$out" || fail "no line saying why it stopped"
  grep -q "the build was reached" <<<"$out" && fail "run.sh went on to the build"
fi
echo "ok"

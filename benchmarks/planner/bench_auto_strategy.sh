#!/usr/bin/env bash
# Times the compilation of bench_auto_strategy.cpp (two auto_strategy searches), then runs it.
# Fails when the compilation takes longer than the limit (default 60 s).
#   bash benchmarks/planner/bench_auto_strategy.sh [c++ compiler] [output dir] [limit seconds]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"; root="$here/../.."
cxx="${1:-g++}"; out="${2:-/tmp}"; limit="${3:-60}"
start=$(date +%s%N)
"$cxx" -std=c++20 -O2 -I"$root/include" "$here/bench_auto_strategy.cpp" -o "$out/bench_auto_strategy"
end=$(date +%s%N)
ms=$(( (end - start) / 1000000 ))
printf 'compile time of two auto_strategy searches: %d.%03d s (limit %s s)\n' $((ms / 1000)) $((ms % 1000)) "$limit"
"$out/bench_auto_strategy"
[ "$ms" -le $(( limit * 1000 )) ]

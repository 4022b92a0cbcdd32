#!/usr/bin/env bash
# Runs bench_parallel_step for every strategy with the rank count its global batch needs.
#   bash benchmarks/bench_parallel_step.sh [build dir] [steps]
set -euo pipefail
build="${1:-build}"; steps="${2:-5}"
exe="$build/benchmarks/bench_parallel_step"
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
[ "$(id -u)" = 0 ] && export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_pml=ob1 OMPI_MCA_btl=self,vader OMPI_MCA_rmaps_base_oversubscribe=1
mpirun -np 1 "$exe" header
for spec in single:1 dp:2 zero1:2 zero2:2 zero3:2 tp2:2 tp2-sp:2 dp2-tp2:4 pp2-gpipe:2 pp2-1f1b:2 pp2-inter:2 dp2-pp2:4 tp2-pp2:4 dp2-tp2-pp2:8; do
  mpirun -np "${spec#*:}" "$exe" "${spec%%:*}" "$steps"
done

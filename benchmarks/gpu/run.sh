#!/usr/bin/env bash
# benchmarks/gpu/run.sh — everything that needs a GPU, in one prepared run (a lent device is
# short-lived: build, test, measure, write results, stop).
#   bash benchmarks/gpu/run.sh [OUT]     (OUT: where results go; default $OUT or out/gpu)
#
# 1. Programs. Each is taken from $WEFT_GPU_PREBUILT (default .gpubin/) when a binary built
#    elsewhere for sm_90a is there and its libraries resolve here, else built here with nvcc
#    directly (the device image may lack the Debian packages CMake's other parts want: no
#    OpenBLAS, no MPI). Prebuilding on a machine without a GPU saves device time:
#      WEFT_GPU_PREBUILD=1 bash benchmarks/gpu/run.sh      # builds into .gpubin/ and stops
# 2. The `gpu` tests: every kernel against the host op (test_kernels_gpu), GPT and LLaMA steps
#    on the device against the host step (test_model_ops_gpu), NCCL in a world of one
#    (test_nccl_world), and the trainer's short f32 and bf16 runs with their loss goals.
# 3. bench_kernels: each kernel at GPT-2 124M's shapes against the copy rate and the bf16
#    matrix-product rate measured in the same run.
# 4. Training: GPT-2 124M at sequence 1024 (f32 and bf16) and a 1.3B GPT (bf16): tokens/s and
#    MFU (PaLM's FLOP count over the bf16 product rate measured in step 3), and PyTorch on the
#    same shapes in the same run (torch_reference.py: torch.compile for GPT-2 124M in bf16, its
#    fastest honest configuration; eager for f32 and the 1.3B model, whose compile would take
#    a minute of the lease each; WEFT_TORCH_EAGER=1 adds eager bf16), as ratios. GPT-2 124M also
#    trains in f16 with dynamic loss scaling. WEFT_GPU_SKIP_TORCH=1 and WEFT_GPU_SKIP_LARGE=1
#    leave out PyTorch and the 1.3B model (a short confirming run).
# Everything lands under OUT (summary.md last; logs.tar.gz with every log); the exit status is
# the tests'. Each program runs under a timeout so the whole script ends inside one lease.
set -uo pipefail
cd "$(dirname "$0")/../.."
out=${1:-${OUT:-out/gpu}}
mkdir -p "$out"
logs=$(mktemp -d)
summary=$out/summary.md
: > "$summary"
say() { echo "$*" | tee -a "$summary"; }

arch=${WEFT_CUDA_ARCH:-90a}
nvcc=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
cuda_root=$(dirname "$(dirname "$nvcc")")
prebuilt=${WEFT_GPU_PREBUILT:-.gpubin}
flags=(-std=c++20 -O3 "-gencode=arch=compute_$arch,code=sm_$arch" --expt-relaxed-constexpr -Iinclude
       -isystem "$cuda_root/include/cccl" -DWEFT_PORTABLE_GEMM -diag-suppress 174,186,128)
# name | source | extra flags
programs=(
  "test_kernels_gpu|tests/cuda/test_kernels_gpu.cu|-lcublasLt"
  "test_model_ops_gpu|tests/cuda/test_model_ops_gpu.cu|-lcublasLt -lcublas"
  "test_nccl_world|tests/comm/test_nccl_world.cu|-lnccl"
  "bench_kernels|benchmarks/gpu/bench_kernels.cu|-lcublasLt"
  "train_gpt_cuda|examples/06_train_gpt_cuda/train_gpt_cuda.cu|-DWEFT_LARGE_PRESETS -lcublasLt -lcublas"
)

if [ "${WEFT_GPU_PREBUILD:-0}" = 1 ]; then
  mkdir -p "$prebuilt"
  for p in "${programs[@]}"; do
    IFS='|' read -r name src extra <<< "$p"
    # shellcheck disable=SC2086
    ( "$nvcc" "${flags[@]}" "$src" -o "$prebuilt/$name" $extra > "$prebuilt/$name.build.txt" 2>&1 \
      && echo "prebuilt $name" || echo "FAILED to prebuild $name (see $prebuilt/$name.build.txt)" ) &
  done
  wait
  # Several processes sharing the GPU (tests/comm/test_gpu_shared_dp.cu) need MPI, which the
  # device image lacks: the test built here against Debian's Open MPI, and that Open MPI's
  # packages, unpacked on the device by step 5.
  if command -v mpicxx > /dev/null; then
    # shellcheck disable=SC2046
    "$nvcc" "${flags[@]}" tests/comm/test_gpu_shared_dp.cu -o "$prebuilt/cuda_gpu_shared_dp" $(mpicxx --showme:compile) \
      -lboost_mpi -lboost_serialization $(mpicxx --showme:link) -lcublasLt -lcublas > "$prebuilt/cuda_gpu_shared_dp.build.txt" 2>&1 \
      && echo "prebuilt cuda_gpu_shared_dp" || echo "FAILED to prebuild cuda_gpu_shared_dp"
    mkdir -p "$prebuilt/ompi-debs"
    (cd "$prebuilt/ompi-debs" && apt-get download libopenmpi3 openmpi-bin openmpi-common libhwloc15 libevent-core-2.1-7 \
       libevent-pthreads-2.1-7 libpmix2 libboost-mpi1.74.0 libboost-serialization1.74.0 libfabric1 libucx0 libpsm2-2 \
       libibverbs1 librdmacm1 libnl-3-200 libnl-route-3-200 libnuma1 libmunge2 > /dev/null 2>&1) || echo "could not download Open MPI's packages"
  fi
  # The trainer's default corpus (Debian's fortunes), which the device image lacks.
  [ -d /usr/share/games/fortunes ] && mkdir -p "$prebuilt/fortunes" &&
    find /usr/share/games/fortunes -maxdepth 1 -type f ! -name '*.dat' -exec cp {} "$prebuilt/fortunes/" \;
  exit 0
fi

# ---- libraries: the toolkit's, and the pip wheels' (cuBLAS, NCCL) where the image has them ----
libdirs=$cuda_root/lib64
for lib in libcublasLt.so.13 libnccl.so.2; do
  d=$(python3 -c "import sys,glob,os
for p in sys.path:
    for f in glob.glob(os.path.join(p,'nvidia','**','$lib'), recursive=True): print(os.path.dirname(f)); raise SystemExit" 2>/dev/null)
  [ -n "$d" ] && libdirs=$libdirs:$d
done
export LD_LIBRARY_PATH=$libdirs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
{ nvidia-smi; nvidia-smi -q -d CLOCK,POWER | head -60; } > "$logs/nvidia-smi.txt" 2>&1 || true
say "# weft on $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null || echo 'no nvidia-smi'), $(date -u +%Y-%m-%dT%H:%MZ)"
say ""
# ---- the trainer's corpus ----
if [ ! -d /usr/share/games/fortunes ] && [ -d "$prebuilt/fortunes" ]; then
  mkdir -p /usr/share/games && cp -r "$prebuilt/fortunes" /usr/share/games/fortunes 2>/dev/null || true
fi
data_args=()
[ -d /usr/share/games/fortunes ] || data_args=(--data docs)

# ---- programs: prebuilt where they load, else built here in parallel ----
bin=$(mktemp -d)
t0=$SECONDS
for p in "${programs[@]}"; do
  IFS='|' read -r name src extra <<< "$p"
  if [ -x "$prebuilt/$name" ] && ! ldd "$prebuilt/$name" 2>/dev/null | grep -q "not found"; then
    cp "$prebuilt/$name" "$bin/$name"
  else
    # shellcheck disable=SC2086
    ( "$nvcc" "${flags[@]}" "$src" -o "$bin/$name" $extra > "$logs/$name.build.txt" 2>&1 \
      || echo "FAILED to build $name (see $name.build.txt)" ) &
  fi
done
wait
say "programs ready in $((SECONDS - t0)) s ($(ls "$bin" | tr '\n' ' '))"

status=0
# run NAME TIMEOUT LOG ARGS...: one program, its output in LOG, its last lines shown.
run() {
  local name=$1 limit=$2 log=$3; shift 3
  if [ ! -x "$bin/$name" ]; then say "- $log: $name not built"; status=1; return 1; fi
  local t=$SECONDS
  timeout "$limit" "$bin/$name" "$@" > "$logs/$log.txt" 2>&1
  local rc=$?
  say "- $log ($name $*): exit $rc in $((SECONDS - t)) s"
  tail -n 4 "$logs/$log.txt" | sed 's/^/    /' | tee -a "$summary"
  return $rc
}

say ""
say "## gpu tests"
run test_kernels_gpu 180 test_kernels_gpu || status=1
grep -E '^FAIL' "$logs/test_kernels_gpu.txt" | head -20 | sed 's/^/    /' | tee -a "$summary"
run test_model_ops_gpu 180 test_model_ops_gpu || status=1
grep -E 'FAIL' "$logs/test_model_ops_gpu.txt" | head -20 | sed 's/^/    /' | tee -a "$summary"
run test_nccl_world 60 test_nccl_world || status=1
run train_gpt_cuda 120 train_small_f32 --preset small --steps 100 --log-every 20 --expect-loss 3.5 "${data_args[@]}" || status=1
run train_gpt_cuda 120 train_small_bf16 --preset small --precision bf16 --steps 100 --log-every 20 --expect-loss 3.6 "${data_args[@]}" || status=1
run train_gpt_cuda 120 train_small_f16 --preset small --precision f16 --steps 100 --log-every 20 --expect-loss 3.6 "${data_args[@]}" || status=1
run train_gpt_cuda 120 train_llama_small_bf16 --preset llama-small --precision bf16 --steps 60 --log-every 20 "${data_args[@]}" || status=1
if grep -qE '^FAIL' "$logs/test_kernels_gpu.txt" 2>/dev/null && command -v compute-sanitizer > /dev/null; then
  timeout 150 compute-sanitizer --tool memcheck --print-limit 20 "$bin/test_kernels_gpu" > "$logs/memcheck.txt" 2>&1
  say "- compute-sanitizer memcheck on test_kernels_gpu: exit $? ($(grep -c 'Invalid' "$logs/memcheck.txt") invalid accesses)"
fi

say ""
say "## kernels"
run bench_kernels 240 bench_kernels
grep -E '^\||^ceilings' "$logs/bench_kernels.txt" >> "$summary"
gemm=$(awk '/^ceiling_bf16_tflops/ {print $2}' "$logs/bench_kernels.txt")
gemm=${gemm:-0}
# PyTorch's causal attention (SDPA, its flash kernel) at the same shape, rows beside weft's
if [ "${WEFT_GPU_SKIP_TORCH:-0}" != 1 ]; then
  timeout 120 python3 benchmarks/gpu/torch_attention.py > "$logs/torch_attention.txt" 2>&1
  say "- torch_attention.py: exit $?"
  grep -E '^\|' "$logs/torch_attention.txt" >> "$summary"
fi

say ""
say "## training steps (tokens/s; MFU over the bf16 product rate above, ${gemm} TFLOP/s)"
rate() { grep -o '[0-9.]* tok/s' "$logs/$1.txt" 2>/dev/null | tail -n 1 | cut -d' ' -f1; }
torch_rate() { grep -o 'torch tokens/s [0-9.]*' "$logs/$1.txt" 2>/dev/null | tail -n 1 | cut -d' ' -f3; }
ratio() {  # label weft-log torch-log
  local w t
  w=$(rate "$2"); t=$(torch_rate "$3")
  if [ -n "$w" ] && [ -n "$t" ]; then
    say "$(python3 -c "print(f'$1: weft {$w:.0f} tok/s, torch {$t:.0f} tok/s, weft/torch = {$w / $t:.2f}')")"
  else
    say "$1: no ratio (weft '${w}', torch '${t}')"
  fi
}
torch_ref() {  # log timeout args...   (WEFT_GPU_SKIP_TORCH=1: none)
  local log=$1 limit=$2; shift 2
  [ "${WEFT_GPU_SKIP_TORCH:-0}" = 1 ] && return 0
  local t=$SECONDS
  PYTHONUNBUFFERED=1 timeout "$limit" python3 benchmarks/gpu/torch_reference.py "$@" > "$logs/$log.txt" 2>&1
  say "- $log (torch_reference.py $*): exit $? in $((SECONDS - t)) s: $(tail -n 1 "$logs/$log.txt")"
}
run train_gpt_cuda 150 gpt2_124m_bf16 --preset gpt2-124m --precision bf16 --steps 30 --log-every 5 --peak-tflops "$gemm" "${data_args[@]}"
[ "${WEFT_TORCH_EAGER:-0}" = 1 ] && torch_ref torch_124m_bf16 120 --steps 30 --bf16
torch_ref torch_124m_bf16_compiled 240 --steps 30 --bf16 --compile
run train_gpt_cuda 150 gpt2_124m_f32 --preset gpt2-124m --steps 20 --log-every 5 "${data_args[@]}"
torch_ref torch_124m_f32 120 --steps 20
run train_gpt_cuda 150 gpt2_124m_f16 --preset gpt2-124m --precision f16 --steps 30 --log-every 5 --peak-tflops "$gemm" "${data_args[@]}"
[ "${WEFT_GPU_SKIP_LARGE:-0}" = 1 ] || run train_gpt_cuda 240 gpt_1_3b_bf16 --preset gpt-1.3b --precision bf16 --steps 12 --log-every 2 --peak-tflops "$gemm" "${data_args[@]}"
torch_ref torch_1_3b_bf16 180 --steps 12 --bf16 --width 2048 --heads 16 --depth 24 --batch 8
say ""
say "## ratios (same run)"
[ "${WEFT_TORCH_EAGER:-0}" = 1 ] && ratio "GPT-2 124M, B=4 S=1024, bf16 vs torch eager" gpt2_124m_bf16 torch_124m_bf16
ratio "GPT-2 124M, B=4 S=1024, bf16 vs torch.compile" gpt2_124m_bf16 torch_124m_bf16_compiled
ratio "GPT-2 124M, B=4 S=1024, f32 (no TF32) vs torch eager" gpt2_124m_f32 torch_124m_f32
ratio "GPT 1.3B, B=8 S=1024, bf16 vs torch eager" gpt_1_3b_bf16 torch_1_3b_bf16
for f in gpt2_124m_bf16 gpt_1_3b_bf16; do
  say "$f: $(grep 'tok/s' "$logs/$f.txt" 2>/dev/null | tail -n 1)"
done

# 5. Several processes on the one GPU through MPI (staging_communicator; NCCL refuses two ranks
#    on one device): Debian's Open MPI unpacked from the carried packages when the image has
#    no mpirun. Last, because unpacking them writes to /.
if [ -x "$prebuilt/cuda_gpu_shared_dp" ] && [ -d "$prebuilt/ompi-debs" ]; then
  say ""
  say "## several processes sharing the GPU (MPI)"
  # Boost.MPI 1.74 (what the test was linked against) beside the image's libraries; the whole
  # Open MPI only where the image has none (the H200 image has Open MPI 4.1.6, ABI 40 as here).
  mkdir -p /opt/weft-boost
  for d in "$prebuilt"/ompi-debs/libboost*.deb; do dpkg -x "$d" /opt/weft-boost; done
  export LD_LIBRARY_PATH=/opt/weft-boost/usr/lib/x86_64-linux-gnu:$LD_LIBRARY_PATH
  if ! command -v mpirun > /dev/null || ldd "$prebuilt/cuda_gpu_shared_dp" | grep -q "libmpi.so.40 => not found"; then
    mkdir -p /opt/weft-mpi
    for d in "$prebuilt"/ompi-debs/*.deb; do dpkg -x "$d" /opt/weft-mpi; done
    cp -a /opt/weft-mpi/. / 2> "$logs/mpi_unpack.txt"; ldconfig 2>> "$logs/mpi_unpack.txt"
  fi
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_pml=ob1 OMPI_MCA_btl=self,vader
  export OMPI_MCA_rmaps_base_oversubscribe=1
  for np in 2 4; do
    t=$SECONDS
    timeout 120 mpirun -np $np -x LD_LIBRARY_PATH "$prebuilt/cuda_gpu_shared_dp" > "$logs/shared_gpu_dp_np$np.txt" 2>&1
    rc=$?
    say "- shared_gpu_dp (mpirun -np $np cuda_gpu_shared_dp): exit $rc in $((SECONDS - t)) s"
    tail -n 5 "$logs/shared_gpu_dp_np$np.txt" | sed 's/^/    /' | tee -a "$summary"
    [ $rc -eq 0 ] || status=1
  done
fi

# Optional, last: compute-sanitizer's memcheck over the kernel tests (slow; WEFT_GPU_MEMCHECK=1).
if [ "${WEFT_GPU_MEMCHECK:-0}" = 1 ] && command -v compute-sanitizer > /dev/null; then
  t=$SECONDS
  timeout 120 compute-sanitizer --tool memcheck --print-limit 20 "$bin/test_kernels_gpu" > "$logs/memcheck_all.txt" 2>&1
  say "- compute-sanitizer memcheck on test_kernels_gpu: exit $? in $((SECONDS - t)) s: $(grep -E 'ERROR SUMMARY' "$logs/memcheck_all.txt" | tail -n 1)"
fi

cp "$logs"/*.txt "$out"/ 2>/dev/null || true
tar -C "$logs" -czf "$out/logs.tar.gz" . 2>/dev/null || true
# $OUT returns at most 8 files: keep the summary, the archive and the two largest tables.
if [ -n "${OUT:-}" ] && [ "$out" = "$OUT" ]; then
  find "$out" -maxdepth 1 -name '*.txt' ! -name bench_kernels.txt ! -name test_kernels_gpu.txt -delete
fi
say ""
say "tests: $([ $status -eq 0 ] && echo passed || echo FAILED); results in $out"
exit $status

#!/usr/bin/env bash
# benchmarks/gpu/run.sh — everything that needs a GPU, in one prepared run (a lent device is
# short-lived: build, test, measure, write results, stop).
#   bash benchmarks/gpu/run.sh [OUT]     (OUT: where results go; default $OUT or out/gpu)
# Builds with nvcc directly (the device image may lack the Debian packages CMake's other parts
# want): the kernel tests against the host ops, the whole-model test (GPT and LLaMA forward,
# backward and steps through cuda_context against the host step) and the single-GPU trainer;
# runs them; times GPT-2 124M at sequence 1024 (tokens/s and MFU from the trainer's progress
# lines) and the same step in PyTorch (torch_reference.py), printing the ratio of the two rates
# measured in this one run. Each result is a file under OUT; the exit status is the tests'.
set -uo pipefail
cd "$(dirname "$0")/../.."
out=${1:-${OUT:-out/gpu}}
mkdir -p "$out"
arch=${WEFT_CUDA_ARCH:-sm_90a}
nvcc=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
cuda_inc=$(dirname "$(dirname "$nvcc")")/include
flags=(-std=c++20 -O3 "-arch=$arch" --expt-relaxed-constexpr -Iinclude -isystem "$cuda_inc/cccl" -DWEFT_PORTABLE_GEMM
       -diag-suppress 174,186 -lcublasLt -lcublas)
nvidia-smi > "$out/nvidia-smi.txt" 2>&1 || true

status=0
build() {  # name source
  local t0=$SECONDS
  if "$nvcc" "${flags[@]}" "$2" -o "$out/$1" > "$out/$1.build.txt" 2>&1; then
    echo "built $1 in $((SECONDS - t0)) s"
  else
    echo "FAILED to build $1 (see $out/$1.build.txt)"; status=1
  fi
}
run() {  # name args...
  local name=$1; shift
  if [ ! -x "$out/$name" ]; then echo "$name: not built"; status=1; return 0; fi
  "$out/$name" "$@" > "$out/$name.txt" 2>&1
  local rc=$?
  echo "$name $*: exit $rc"; tail -n 5 "$out/$name.txt"
  [ $rc -eq 0 ] || status=1
}

build test_kernels_gpu tests/cuda/test_kernels_gpu.cu &
build test_model_ops_gpu tests/cuda/test_model_ops_gpu.cu &
build train_gpt_cuda examples/06_train_gpt_cuda/train_gpt_cuda.cu &
wait

run test_kernels_gpu
run test_model_ops_gpu
run train_gpt_cuda --preset small --steps 100 --log-every 20 --expect-loss 3.5
cp "$out/train_gpt_cuda.txt" "$out/train_small.txt" 2>/dev/null || true
run train_gpt_cuda --preset small --precision bf16 --steps 100 --log-every 20 --expect-loss 3.6
cp "$out/train_gpt_cuda.txt" "$out/train_small_bf16.txt" 2>/dev/null || true
run train_gpt_cuda --preset gpt2-124m --steps 30 --log-every 5
cp "$out/train_gpt_cuda.txt" "$out/train_gpt2_124m.txt" 2>/dev/null || true
run train_gpt_cuda --preset gpt2-124m --precision bf16 --steps 30 --log-every 5
cp "$out/train_gpt_cuda.txt" "$out/train_gpt2_124m_bf16.txt" 2>/dev/null || true
# The same step in PyTorch (the device image has it), for ratios measured in this run.
ratio() {  # label weft-file torch-args...
  local label=$1 weft=$2; shift 2
  python3 benchmarks/gpu/torch_reference.py --steps 30 "$@" > "$out/torch_$label.txt" 2>&1
  echo "torch $label: $(tail -n 1 "$out/torch_$label.txt")"
  local w t
  w=$(grep -o '[0-9.]* tok/s' "$out/$weft" 2>/dev/null | tail -n 1 | cut -d' ' -f1)
  t=$(grep -o 'torch tokens/s [0-9.]*' "$out/torch_$label.txt" 2>/dev/null | cut -d' ' -f3)
  if [ -n "$w" ] && [ -n "$t" ]; then
    python3 -c "print(f'GPT-2 124M, B=4 S=1024, $label: weft/torch tokens/s = {$w / $t:.2f}')" | tee -a "$out/ratio.txt"
  fi
}
ratio f32 train_gpt2_124m.txt
ratio bf16 train_gpt2_124m_bf16.txt --bf16
echo "results in $out"
exit $status

#!/usr/bin/env bash
# Build tools/softmax_lab.cu with nvcc (one binary per dtype, in parallel) and run it on the GPU.
#
#   tools/softmax_lab.sh [--dtype half|bfloat16|float|double ...] [--algo ...] [--cols ...]
#                        [--variant default|grid=tiles|grid=persistent|path=block|smem=48k|
#                                   online=N|block=N|copy=registers|passes=3|pack=2|
#                                   cache=float|path=registers|registers=BxN|rows=N|
#                                   held=0|warp=WxN[xB]|grid=Nx|occ=N|hold=off|shared=off|
#                                   pair=N|pair=1m|pair=1l|pair=1ml|bulk=MODE[/THREADS]|
#                                   triton|triton=DIR ...]
#                        [--reps N] [--triton DIR] [--interleave] [--drain]
#
# The variants are described at the top of tools/softmax_lab.cu. The variant triton runs the
# cubins tools/triton_cubins.py wrote into --triton DIR.
#
# With no --dtype, half, bfloat16 and float run one after another. Environment: ONEFLITE_CUDA_ARCH
# (default 90), LAB_BUILD (where the binaries go, default build/softmax_lab).
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
build="${LAB_BUILD:-$repo/build/softmax_lab}"
arch="${ONEFLITE_CUDA_ARCH:-90}"
export PATH="/usr/local/cuda/bin:$PATH"
mkdir -p "$build"

dtypes=()
args=("$@")
for ((i = 0; i < ${#args[@]}; ++i)); do
  if [ "${args[$i]}" = "--dtype" ]; then dtypes+=("${args[$((i + 1))]}"); fi
done
[ ${#dtypes[@]} -gt 0 ] || dtypes=(half bfloat16 float)

code() { case "$1" in half) echo 1 ;; bfloat16) echo 2 ;; float) echo 3 ;; double) echo 4 ;;
         *) echo "softmax_lab: unknown dtype $1" >&2; exit 2 ;; esac; }
sources=("$repo/tools/softmax_lab.cu" "$repo/cuda/ep/primitive/softmax_plan.cu")
for dtype in "${dtypes[@]}"; do
  binary="$build/softmax_lab_$dtype"
  # The newest of the sources and the binary (ls fails, harmlessly, while there is no binary).
  newest=$( (ls -t "${sources[@]}" "$repo"/cuda/ep/primitive/softmax_*.cuh \
                "$repo/cuda/ep/cuda_stream.h" "$binary" 2>/dev/null || true) | head -1)
  if [ "$newest" != "$binary" ]; then
    nvcc -O3 -std=c++17 --expt-relaxed-constexpr -arch="sm_$arch" -DLAB_DTYPE="$(code "$dtype")" \
      -I"$repo/cuda" -I"$repo/cpp/include" "${sources[@]}" -o "$binary" &
  fi
done
wait
for dtype in "${dtypes[@]}"; do
  rest=()
  for ((i = 0; i < ${#args[@]}; ++i)); do
    if [ "${args[$i]}" = "--dtype" ]; then i=$((i + 1)); else rest+=("${args[$i]}"); fi
  done
  "$build/softmax_lab_$dtype" --dtype "$dtype" "${rest[@]}"
done

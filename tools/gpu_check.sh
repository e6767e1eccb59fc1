#!/usr/bin/env bash
# On a machine with an NVIDIA GPU: build oneflite with its CUDA backend, run the whole test
# suite (CUDA tests included; none may skip), and print a summary.
#
#   tools/gpu_check.sh [extra pytest args]
#
# Environment: ONEFLITE_CUDA_ARCH (default 90, the H100/H200), OUT (where logs go).
set -uo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
out="${OUT:-/tmp/oneflite-gpu-check}"
mkdir -p "$out"
export PATH="/usr/local/cuda/bin:$PATH"
# Some CUDA images preset CXX to a g++ that links libstdc++ statically into every shared
# library. oneflite is three shared libraries that throw C++ exceptions across each other, and
# with a private libstdc++ in each the first exception crashes the process. The distribution's
# g++ links libstdc++ dynamically: use it (ONEFLITE_CXX overrides).
if [ -n "${ONEFLITE_CXX:-}" ] || [ -x /usr/bin/g++ ]; then
  export CXX="${ONEFLITE_CXX:-/usr/bin/g++}"
  export CUDAHOSTCXX="$CXX"
fi

echo "== device"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$out/gpu.txt"

echo "== build (CUDA architectures ${ONEFLITE_CUDA_ARCH:-90})"
start=$(date +%s)
if ! python3 -m pip install --no-build-isolation --no-deps -q \
    -Cbuild-dir="$repo/build/gpu-$(basename "${CXX:-cxx}")" \
    -Ccmake.define.ONEFLITE_CUDA=ON \
    -Ccmake.define.CMAKE_CUDA_ARCHITECTURES="${ONEFLITE_CUDA_ARCH:-90}" \
    "$repo" >"$out/build.txt" 2>&1; then
  tail -50 "$out/build.txt"
  echo "gpu_check: BUILD FAILED"
  exit 1
fi
echo "built in $(( $(date +%s) - start )) s"

echo "== python -m oneflite"
(cd /tmp && python3 -m oneflite) >"$out/main.txt" 2>&1; head -12 "$out/main.txt"

echo "== pytest"
(cd /tmp && python3 -m pytest -q -rs -p no:cacheprovider "$repo/tests" "$@") >"$out/pytest.txt" 2>&1
status=$?
grep -E "^(FAILED|ERROR)" "$out/pytest.txt" | head -40
skipped_cuda=$(grep -E "^SKIPPED" "$out/pytest.txt" | grep -ci "no CUDA")
echo "== summary"
echo "device: $(head -1 "$out/gpu.txt")"
echo "pytest: $(tail -1 "$out/pytest.txt")"
echo "CUDA tests skipped: $skipped_cuda"
if [ "$status" -ne 0 ] || [ "$skipped_cuda" -ne 0 ]; then
  echo "gpu_check: FAILED"
  exit 1
fi
echo "gpu_check: PASSED"

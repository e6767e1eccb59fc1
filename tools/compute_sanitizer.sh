#!/usr/bin/env bash
# On a machine with an NVIDIA GPU: run a small pytest selection that reaches every CUDA kernel
# path (tests/test_cuda_paths.py: each warp width and rows-per-access, the shared-memory and
# online paths, all four float dtypes, softmax and log_softmax, permute and cast) under each of
# compute-sanitizer's tools, print one summary line per tool, and exit non-zero if any tool
# reported an error (or the tests failed or ran out of time).
#
#   tools/compute_sanitizer.sh [tool ...]          # default: memcheck racecheck initcheck synccheck
#
# Environment:
#   PYTHON             interpreter with oneflite (CUDA build) installed (default: python3)
#   SANITIZER_BUILD=1  first build and install oneflite with CUDA into $PYTHON's environment,
#                      as tools/gpu_check.sh does (ONEFLITE_CUDA_ARCH, default 90)
#   SANITIZER_TESTS    what pytest runs (default: tests/test_cuda_paths.py)
#   SANITIZER_TIMEOUT  seconds allowed per tool (default: 300 for racecheck, 150 for the others).
#                      On an H100 over the default tests (751), racecheck takes ~4 minutes and
#                      each other tool ~2; where one command may run 10 minutes at most, run
#                      racecheck in a command of its own.
#   OUT                where logs go (default: /tmp/oneflite-compute-sanitizer)
set -uo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
python="${PYTHON:-python3}"
out="${OUT:-/tmp/oneflite-compute-sanitizer}"
tests="${SANITIZER_TESTS:-$repo/tests/test_cuda_paths.py}"
tools=("$@")
[ "${#tools[@]}" -eq 0 ] && tools=(memcheck racecheck initcheck synccheck)
mkdir -p "$out"
export PATH="$PATH:/usr/local/cuda/bin"

sanitizer="$(command -v compute-sanitizer || true)"
if [ -z "$sanitizer" ]; then
  echo "compute_sanitizer: compute-sanitizer not found (looked on PATH and in /usr/local/cuda/bin)"
  exit 2
fi

if [ "${SANITIZER_BUILD:-0}" = "1" ]; then
  if [ -n "${ONEFLITE_CXX:-}" ] || [ -x /usr/bin/g++ ]; then  # see tools/gpu_check.sh
    export CXX="${ONEFLITE_CXX:-/usr/bin/g++}"
    export CUDAHOSTCXX="$CXX"
  fi
  echo "== build (CUDA architectures ${ONEFLITE_CUDA_ARCH:-90})"
  if ! "$python" -m pip install --no-build-isolation --no-deps -q \
      -Cbuild-dir="$repo/build/gpu" -Ccmake.define.ONEFLITE_CUDA=ON \
      -Ccmake.define.CMAKE_CUDA_ARCHITECTURES="${ONEFLITE_CUDA_ARCH:-90}" \
      "$repo" >"$out/build.txt" 2>&1; then
    tail -30 "$out/build.txt"
    echo "compute_sanitizer: BUILD FAILED"
    exit 2
  fi
fi

cd /tmp || exit 2  # import the installed oneflite, not the source tree
if ! "$python" -c "import oneflite, sys; sys.exit(0 if oneflite.cuda.is_available() else 1)"; then
  echo "compute_sanitizer: oneflite here has no usable CUDA GPU (build it with CUDA first, or" \
    "set SANITIZER_BUILD=1)"
  exit 2
fi
echo "compute_sanitizer: $("$sanitizer" --version | grep -i version | head -1);" \
  "tests: $tests; logs in $out"

status=0
summaries=()
for tool in "${tools[@]}"; do
  log="$out/$tool.txt"
  per_tool="${SANITIZER_TIMEOUT:-150}"
  [ -z "${SANITIZER_TIMEOUT:-}" ] && [ "$tool" = racecheck ] && per_tool=300
  start=$(date +%s)
  # shellcheck disable=SC2086  # $tests may name several paths
  timeout --signal=INT --kill-after=15 "$per_tool" \
    "$sanitizer" --tool "$tool" --target-processes all --error-exitcode 1 --print-limit 20 \
    "$python" -m pytest -q -p no:cacheprovider $tests >"$log" 2>&1
  rc=$?
  seconds=$(( $(date +%s) - start ))
  # One summary per process the sanitizer followed: "ERROR SUMMARY: N errors", or for
  # racecheck "RACECHECK SUMMARY: H hazards displayed (N errors, W warnings)".
  errors=$(grep -Eo "ERROR SUMMARY: [0-9]+|RACECHECK SUMMARY: .*\(([0-9]+) errors" "$log" |
    grep -Eo "[0-9]+ errors|SUMMARY: [0-9]+" | grep -Eo "[0-9]+" | awk '{n += $1} END {print n + 0}')
  processes=$(grep -cE "(ERROR|RACECHECK) SUMMARY:" "$log")
  result=$(grep -E "^[0-9]+ (passed|failed)|(passed|failed|error).* in [0-9.]+s" "$log" | tail -1)
  verdict=PASS
  if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ] || [ "$processes" -eq 0 ]; then
    verdict="INCOMPLETE (exit $rc after ${seconds} s; raise SANITIZER_TIMEOUT or narrow SANITIZER_TESTS)"
  elif [ "$errors" -gt 0 ]; then
    verdict="FAIL"
  elif [ "$rc" -ne 0 ]; then
    verdict="FAIL (tests failed, exit $rc)"
  fi
  [ "$verdict" = PASS ] || status=1
  line="$tool: $errors errors; pytest: ${result:-no result}; ${seconds} s; $verdict"
  summaries+=("$line")
  echo "$line"
  if [ "$errors" -gt 0 ]; then
    grep -E "^========= (Invalid|Uninitialized|Race|Barrier|Error|ERROR|  )" "$log" | head -20
  fi
done

echo "== summary"
printf '%s\n' "${summaries[@]}"
if [ "$status" -ne 0 ]; then
  echo "compute_sanitizer: FAILED (logs in $out)"
else
  echo "compute_sanitizer: PASSED"
fi
exit "$status"

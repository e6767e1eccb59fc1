#!/usr/bin/env bash
# On a machine with an NVIDIA GPU: build oneflite with its CUDA backend, run the whole test
# suite (CUDA tests included; none may skip), and print a summary; with --bench, then the
# benchmark's run of record, written into docs/_static/bench.
#
#   tools/gpu_check.sh [--jobs N] [--bench] [extra pytest args]
#
#   --jobs N   split the suite's tests round-robin over N pytest processes that share the GPU
#              (default 1). Five processes ran the whole suite in about 130 s on an H100.
#   --bench    after the tests pass: python -m oneflite.bench --device all, then --overhead,
#              then docs/_tools/record.py bench and cuda (about 4 minutes on an H100).
#
# Environment: ONEFLITE_CUDA_ARCH (default 90, the H100/H200), OUT (where logs go).
set -uo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
out="${OUT:-/tmp/oneflite-gpu-check}"
jobs=1
bench=0
while [ $# -gt 0 ]; do
  case "$1" in
    --jobs) jobs="${2:?--jobs needs a count}"; shift 2 ;;
    --bench) bench=1; shift ;;
    *) break ;;
  esac
done
case "$jobs" in
  '' | *[!0-9]* | 0) echo "gpu_check: --jobs takes a positive count, not '$jobs'" >&2; exit 2 ;;
esac
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
echo "built in $(( $(date +%s) - start )) s, $(grep -ci warning "$out/build.txt") lines that warn"

echo "== python -m oneflite"
(cd /tmp && python3 -m oneflite) >"$out/main.txt" 2>&1; head -12 "$out/main.txt"

# Runs pytest from /tmp (so that the installed package is imported, not the checkout) on the
# given paths or test ids, into $out/pytest$1.txt.
run_pytest() {
  local log="$out/pytest$1.txt"
  shift
  (cd /tmp && python3 -m pytest -q -rs -p no:cacheprovider "$@") >"$log" 2>&1
}

echo "== pytest ($jobs process(es))"
start=$(date +%s)
rm -f "$out"/pytest*.txt "$out"/shard*.txt
status=0
if [ "$jobs" -eq 1 ]; then
  run_pytest "" "$repo/tests" "$@" || status=$?
else
  # Test ids are relative to the repository (its pyproject.toml is pytest's rootdir). A file
  # that fails to collect would be in no shard: the check fails on it here, as one process would.
  if ! (cd /tmp && python3 -m pytest --collect-only -q -p no:cacheprovider "$repo/tests" "$@") \
      >"$out/collect.txt" 2>&1; then
    tail -8 "$out/collect.txt"
    echo "gpu_check: COLLECTION FAILED"
    exit 1
  fi
  # The ids come first, one a line, up to the first blank line (a warnings summary may follow).
  awk 'NF == 0 { exit } /::/' "$out/collect.txt" | awk -v n="$jobs" -v dir="$out" -v repo="$repo" \
    '{ print repo "/" $0 > (dir "/shard" (NR % n) ".txt") }'
  if ! ls "$out"/shard*.txt >/dev/null 2>&1; then
    tail -20 "$out/collect.txt"
    echo "gpu_check: NO TESTS COLLECTED"
    exit 1
  fi
  pids=()
  for shard in "$out"/shard*.txt; do
    i="${shard##*/shard}"
    i="${i%.txt}"
    mapfile -t ids <"$shard"
    run_pytest "$i" "${ids[@]}" "$@" &
    pids+=("$!")
  done
  for pid in "${pids[@]}"; do wait "$pid" || status=$?; done
fi
echo "tests ran in $(( $(date +%s) - start )) s"
grep -hE "^(FAILED|ERROR)" "$out"/pytest*.txt | head -40
skipped_cuda=$(cat "$out"/pytest*.txt | grep -E "^SKIPPED" | grep -ci "no CUDA")
# The counts of every process's last line, added up by kind ("123 passed, 4 skipped in ...").
counts=$(for log in "$out"/pytest*.txt; do tail -1 "$log"; done |
  grep -oE "[0-9]+ (passed|failed|skipped|errors?|xfailed|xpassed)" |
  awk '{ n[$2] += $1 } END { for (k in n) printf "%s%d %s", (s++ ? ", " : ""), n[k], k; print "" }')
echo "== summary"
echo "device: $(head -1 "$out/gpu.txt")"
echo "pytest: $counts"
echo "CUDA tests skipped: $skipped_cuda"
if [ "$status" -ne 0 ] || [ "$skipped_cuda" -ne 0 ]; then
  echo "gpu_check: FAILED"
  exit 1
fi
echo "gpu_check: PASSED"

if [ "$bench" -eq 1 ]; then
  echo "== benchmark (its output: $out/bench.txt, $out/overhead.txt, $out/bench/)"
  start=$(date +%s)
  (cd /tmp && python3 -m oneflite.bench --device all --out "$out/bench") >"$out/bench.txt" 2>&1 &&
    (cd /tmp && python3 -m oneflite.bench --overhead --out "$out/bench") >"$out/overhead.txt" 2>&1 &&
    python3 "$repo/docs/_tools/record.py" bench "$out/bench" >"$out/record.txt" 2>&1 &&
    python3 "$repo/docs/_tools/record.py" cuda >>"$out/record.txt" 2>&1
  status=$?
  grep -hE "copy \(geomean\)|us/call" "$out/bench.txt" "$out/overhead.txt"
  echo "benchmark and record ran in $(( $(date +%s) - start )) s"
  if [ "$status" -ne 0 ]; then
    tail -20 "$out/bench.txt" "$out/overhead.txt" "$out/record.txt" 2>/dev/null
    echo "gpu_check: BENCHMARK FAILED"
    exit 1
  fi
  echo "gpu_check: BENCHMARK RECORDED in docs/_static/bench"
fi

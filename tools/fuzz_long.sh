#!/usr/bin/env bash
# Run the property-based fuzz tests (tests/test_fuzz.py) with Hypothesis's "long" profile: at
# least 100,000 fresh random examples per test, on the CPU (and CUDA where a GPU is usable).
#
#   tools/fuzz_long.sh [extra pytest args]
#
# Each test runs in its own pytest process, FUZZ_JOBS at a time, against the oneflite that
# $PYTHON imports. Prints one line per test (result, examples run, seconds) and a total, and
# exits non-zero if any test failed. A failure prints a @reproduce_failure blob in its log.
#
# Environment:
#   PYTHON              the interpreter with oneflite installed (default: python3)
#   FUZZ_LONG_EXAMPLES  examples per test (default: 100000)
#   FUZZ_JOBS           tests run at once (default: the number of CPUs)
#   OUT                 where logs go (default: /tmp/oneflite-fuzz-long)
set -uo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
python="${PYTHON:-python3}"
out="${OUT:-/tmp/oneflite-fuzz-long}"
jobs="${FUZZ_JOBS:-$(nproc)}"
mkdir -p "$out"
rm -f "$out"/*.log "$out/report.jsonl"

export HYPOTHESIS_PROFILE=long
export FUZZ_LONG_EXAMPLES="${FUZZ_LONG_EXAMPLES:-100000}"
export FUZZ_REPORT="$out/report.jsonl"

# Run from outside the source tree, so the installed oneflite is the one imported.
cd /tmp || exit 1
mapfile -t tests < <("$python" -m pytest --collect-only -q -p no:cacheprovider \
  "$repo/tests/test_fuzz.py" "$@" 2>/dev/null | grep '::')
if [ "${#tests[@]}" -eq 0 ]; then
  echo "fuzz_long: no tests collected from $repo/tests/test_fuzz.py"
  exit 1
fi
echo "fuzz_long: ${#tests[@]} tests, $FUZZ_LONG_EXAMPLES examples each, $jobs at a time;" \
  "logs in $out"

run_one() {
  local id="$1" log
  log="$out/$(echo "${id##*::}" | tr -c 'A-Za-z0-9_.\n-' '_').log"
  if "$python" -m pytest -q -p no:cacheprovider --hypothesis-show-statistics "$id" \
      >"$log" 2>&1; then
    echo "PASSED $id"
  else
    echo "FAILED $id (exit $?; see $log)"
  fi
}
export -f run_one
export python out

start=$(date +%s)
printf '%s\n' "${tests[@]}" | sed "s#^#$repo/#; s#^$repo/$repo/#$repo/#" \
  | xargs -d '\n' -P "$jobs" -I{} bash -c 'run_one "$1"' _ {} | tee "$out/results.txt"
wall=$(( $(date +%s) - start ))

echo "== summary"
"$python" - "$out/report.jsonl" "$out/results.txt" "$wall" <<'EOF'
import json, sys
from pathlib import Path

report, results, wall = Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3])
counts = {}
if report.exists():
    for line in report.read_text().splitlines():
        entry = json.loads(line)
        counts[entry["test"]] = (entry["examples"], entry["seconds"])
failed = 0
for line in results.read_text().splitlines():
    status, test = line.split(" ", 2)[:2]
    name = test.split("::")[-1].split("[")[0]
    failed += status != "PASSED"
    if name in counts:
        examples, seconds = counts[name]
        print(f"{status:6} {examples:>8} examples {seconds:>8.1f} s  {test.split('::')[-1]}")
    else:  # not a Hypothesis test
        print(f"{status:6} {'-':>8}          {'-':>8}    {test.split('::')[-1]}")
total = sum(c for c, _ in counts.values())
print(f"fuzz_long: {total} examples in {wall} s wall, {failed} failed test(s)")
sys.exit(1 if failed else 0)
EOF

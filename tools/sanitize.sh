#!/usr/bin/env bash
# Build the C++ core and oneflite._C with AddressSanitizer and UndefinedBehaviorSanitizer into
# a private virtual environment, then run the test suite under them.
#
#   tools/sanitize.sh [extra pytest args]
#
# Python itself is not instrumented, so the sanitizer runtimes are preloaded. Leak checking is
# off: CPython keeps objects alive until exit by design, which LeakSanitizer reports as leaks.
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
venv="${SANITIZE_VENV:-/tmp/oneflite-sanitize-venv}"

# The venv sees the system's packages, so the build tools may come from there; the "test"
# extra brings what the suite imports (ml_dtypes, hypothesis, Sphinx) where the system lacks it.
python3 -m venv --system-site-packages "$venv"
"$venv/bin/python" -m pip install -q --no-build-isolation \
  -Cbuild-dir="$repo/build/sanitize" \
  -Ccmake.build-type=RelWithDebInfo \
  -Ccmake.define.ONEFLITE_SANITIZE=ON \
  -Ccmake.define.ONEFLITE_CUDA=OFF \
  "$repo[test]"

preload="$(g++ -print-file-name=libasan.so):$(g++ -print-file-name=libubsan.so)"
cd /tmp
LD_PRELOAD="$preload" \
ASAN_OPTIONS="detect_leaks=0:abort_on_error=1:strict_init_order=1" \
UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1" \
  "$venv/bin/python" -m pytest -q -p no:cacheprovider "$repo/tests" "$@"
echo "sanitize: the suite passed under AddressSanitizer and UndefinedBehaviorSanitizer"

#!/usr/bin/env bash
# The repository's lint: ruff's checks over the Python (pyproject.toml's [tool.ruff]) and
# clang-format over the C++ and CUDA sources (.clang-format). Fails on any finding; with --fix,
# applies ruff's safe fixes and clang-format's edits instead.
set -euo pipefail
cd "$(dirname "$0")/.."

mapfile -t sources < <(git ls-files '*.cpp' '*.h' '*.cu' '*.cuh')
if [ "${1:-}" = "--fix" ]; then
  ruff check --fix .
  clang-format -i "${sources[@]}"
else
  ruff check .
  clang-format --dry-run -Werror "${sources[@]}"
fi

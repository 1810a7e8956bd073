#!/usr/bin/env bash
# Install ember with its test extra, the plugins in plugins/ and the PyTorch oracle (2.13.0, CPU build), then run
# the whole suite. Arguments go to pytest (e.g. --backend cpu).
set -euo pipefail
cd "$(dirname "$0")/.."
python -m pip install -q -e ".[test]"
for p in plugins/*/; do
  [ -f "$p/pyproject.toml" ] && python -m pip install -q -e "$p"
done
# The oracle the numerics are checked against. Without a reachable package index the comparisons skip, and the
# test summary says so in one line.
# PyTorch's CPU index is tried with one quick retry, so a machine that cannot reach it falls back fast to the
# package indexes pip is configured with.
if ! python -m pip install -q "torch==2.13.0+cpu" --extra-index-url https://download.pytorch.org/whl/cpu \
    --retries 1 --timeout 15 2>/dev/null && ! python -m pip install -q "torch==2.13.0"; then
  echo "scripts/test.sh: could not install the PyTorch oracle (torch==2.13.0+cpu): no package index reachable" >&2
  export EMBER_ORACLE_UNREACHABLE=1
fi
python -m pytest -q "$@"

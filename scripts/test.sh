#!/usr/bin/env bash
# Install ember with its test extra and the plugins in plugins/, then run the whole suite.
set -euo pipefail
cd "$(dirname "$0")/.."
python -m pip install -q -e ".[test]"
for p in plugins/*/; do
  [ -f "$p/pyproject.toml" ] && python -m pip install -q -e "$p"
done
python -m pytest -q "$@"

#!/usr/bin/env bash
# Install ember with its test extra, the plugins in plugins/ and the PyTorch oracle (2.13.0, CPU build), then run
# the whole suite. Arguments go to pytest (e.g. --backend cpu).
set -euo pipefail
cd "$(dirname "$0")/.."
python -m pip install -q -e ".[test]"
for p in plugins/*/; do
  [ -f "$p/pyproject.toml" ] && python -m pip install -q -e "$p"
done
# PyAV, ember-vision's optional video backend (its video io and datasets tests skip without it)
python -m pip install -q -e "plugins/ember_vision[video]" 2>/dev/null \
  || echo "scripts/test.sh: PyAV not reachable: ember-vision's video tests skip" >&2
# The oracle the numerics are checked against. Without a reachable package index the comparisons skip, and the
# test summary says so in one line.
# PyTorch's CPU index is tried with one quick retry, so a machine that cannot reach it falls back fast to the
# package indexes pip is configured with.
if ! python -m pip install -q "torch==2.13.0+cpu" --extra-index-url https://download.pytorch.org/whl/cpu \
    --retries 1 --timeout 15 2>/dev/null && ! python -m pip install -q "torch==2.13.0"; then
  echo "scripts/test.sh: could not install the PyTorch oracle (torch==2.13.0+cpu): no package index reachable" >&2
  export EMBER_ORACLE_UNREACHABLE=1
fi
# torchvision's pure-Python package, imported only in the reference processes of the vision tests (its C++ ops do
# not load against the CPU build of PyTorch); kept out of site-packages so that ember's own torchvision stays the
# one a plain `import torchvision` finds under the alias.
if [ -z "${EMBER_ORACLE_UNREACHABLE:-}" ] && [ ! -d .cache/torchvision-ref/torchvision ]; then
  python -m pip install -q --no-deps --target .cache/torchvision-ref "torchvision==0.28.0" 2>/dev/null \
    || echo "scripts/test.sh: torchvision 0.28.0 not reachable: the comparisons against it skip" >&2
fi
python -m pytest -q "$@"

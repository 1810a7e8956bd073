#!/usr/bin/env bash
# The CUDA check, prepared to run once on a lent GPU machine (see docs/devices.md, "Checking on a GPU").
#
#   bash scripts/gpu_check.sh prepare   # here, on the CPU machine: fetch the wheels the GPU machine lacks into .whl/
#   bash scripts/gpu_check.sh           # there: install, run the CUDA suite, then bench/bench_cuda.py
#
# Everything lands in $OUT (default ./gpu-out): info.txt, cuda-suite.xml (JUnit), suite.log, suite-groups.md
# (failures grouped by root cause), bench_cuda.json and bench.log.  Each part has its own time limit, so a hang
# loses only that part; the whole stays under 9 minutes.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/gpu-out}
mkdir -p "$OUT"
PY=${PYTHON:-python3}

if [ "${1:-}" = "prepare" ]; then
  # The GPU machine has CuPy, cuDNN, PyTorch CUDA and pytest-xdist/-timeout, but not NVIDIA's cuDNN frontend.
  grep -qx '/.whl/' .git/info/exclude 2>/dev/null || echo '/.whl/' >> .git/info/exclude
  mkdir -p .whl
  for spec in "nvidia-cudnn-frontend==1.32.0"; do
    $PY -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
      --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64 \
      --platform manylinux2014_x86_64 -d .whl "$spec" || echo "gpu_check: could not fetch $spec" >&2
  done
  ls -l .whl
  exit 0
fi

step() { echo "== $(date -u +%H:%M:%S) $*"; }

step "install"
if ls .whl/*.whl >/dev/null 2>&1; then
  $PY -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
    && export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
fi
$PY -m pip install -q --no-deps --no-build-isolation --no-index -e . || exit 1
for p in plugins/*/; do
  [ -f "$p/pyproject.toml" ] && $PY -m pip install -q --no-deps --no-build-isolation --no-index -e "$p"
done
{ nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv; $PY -m ember.info; } > "$OUT/info.txt" 2>&1
cat "$OUT/info.txt"

step "CUDA suite (limit 330 s)"
timeout -k 10 330 $PY -m pytest -p no:benchmark -p no:cacheprovider -q -n 12 --timeout 90 --backend cuda \
  --junitxml="$OUT/cuda-suite.xml" -o junit_logging=no > "$OUT/suite.log" 2>&1
echo "pytest exit: $?"
tail -n 3 "$OUT/suite.log"
$PY scripts/junit_groups.py "$OUT/cuda-suite.xml" > "$OUT/suite-groups.md" 2>&1 && head -n 40 "$OUT/suite-groups.md"

step "bench/bench_cuda.py (limit 170 s)"
PYTHONUNBUFFERED=1 timeout -k 10 170 $PY bench/bench_cuda.py --steps 15 --json "$OUT/bench_cuda.json" \
  > "$OUT/bench.log" 2>&1
echo "bench exit: $?"
cat "$OUT/bench.log"
step "done"

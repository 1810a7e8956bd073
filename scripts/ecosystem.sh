#!/usr/bin/env bash
# The full ecosystem comparison: every library's chosen tests under PyTorch and under ember, table into docs.
# Extra arguments go to python -m ember.ecosystem (e.g. "einops skorch --smoke", or
# "transformers --tests-from DIR --subset tests/models/vit/test_modeling_vit.py" for test files gathered into DIR).
set -euo pipefail
cd "$(dirname "$0")/.."
exec python -m ember.ecosystem --write docs/ecosystem.md "$@"

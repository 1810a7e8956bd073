"""The conformance tests: ember's op tables and in-place checks on each selected backend.

``pytest --ember-backend NAME`` adds this module to any test run (the pytest
plugin does it), so a backend or plugin author runs exactly what ember's own
suite runs (``tests/test_kit.py`` imports these tests).
"""
import pytest

from ember.testing import kit

CASES = kit.cases()


@pytest.mark.parametrize("case", CASES, ids=[kit.case_id(c) for c in CASES])
def test_op_table(case, device):
    kit.run_case(case, device)


@pytest.mark.parametrize("entry", kit.INPLACE, ids=[e[0] for e in kit.INPLACE])
def test_inplace_semantics(entry, device):
    kit.run_inplace(entry, device)

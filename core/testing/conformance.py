"""The conformance tests: every op table of ember and the in-place checks on each selected backend.

``pytest --ember-backend NAME`` adds this module to any test run (the pytest
plugin does it), so a backend or plugin author runs exactly what ember's own
suite runs (``tests/test_kit.py`` imports these tests).  A row that cannot run
on a backend skips there with the reason the row gives.
"""
import pytest

from ember.testing import kit

CASES = kit.cases()


@pytest.mark.parametrize("case", CASES, ids=[kit.case_id(c) for c in CASES])
def test_op_table(case, device):
    reason = kit.skip_reason(case, device)
    if reason:
        pytest.skip(reason)
    kit.run_case(case, device)


@pytest.mark.parametrize("entry", kit.INPLACE, ids=[e[0] for e in kit.INPLACE])
def test_inplace_semantics(entry, device):
    kit.run_inplace(entry, device)

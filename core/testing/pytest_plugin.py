"""pytest plugin: run tests once per ember backend.

``pytest --ember-backend cpu`` (or ``--backend cpu``, or ``EMBER_TEST_BACKENDS=cpu,cuda``) limits the
backends; a named backend that cannot run here makes its tests skip with the reason.  A test takes the
``device`` fixture (a device-type string) to run on each.
"""
from __future__ import annotations

import os

import pytest


def pytest_addoption(parser):
    group = parser.getgroup("ember")
    group.addoption("--ember-backend", "--backend", dest="ember_backend", action="append", default=None,
                    help="run tensor tests on this ember backend only (repeatable; default: every available one)")


def _selected(config):
    names = config.getoption("ember_backend", default=None)
    if not names and os.environ.get("EMBER_TEST_BACKENDS"):
        names = [n for n in os.environ["EMBER_TEST_BACKENDS"].split(",") if n]
    return names


def pytest_generate_tests(metafunc):
    if "device" not in metafunc.fixturenames:
        return
    import ember
    from ember.plugins import REGISTRY

    names = _selected(metafunc.config)
    params = []
    if names:
        for n in names:
            b = REGISTRY.backends.get(n)
            if b is None:
                params.append(pytest.param(n, marks=pytest.mark.skip(reason=f"no ember backend named {n!r}")))
            elif not b.is_available():
                params.append(pytest.param(n, marks=pytest.mark.skip(
                    reason=f"ember backend {n!r} unavailable: {b.unavailable_reason()}")))
            else:
                params.append(n)
    else:
        params = ember.testing.available_backends()
    metafunc.parametrize("device", params)

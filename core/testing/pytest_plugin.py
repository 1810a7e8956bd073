"""pytest plugin: run tests once per ember backend.

``pytest --ember-backend cpu`` (or ``--backend cpu``, or ``EMBER_TEST_BACKENDS=cpu,cuda``) limits the
backends; a named backend that cannot run here makes its tests skip with the reason.  A test takes the
``device`` fixture (a device-type string) to run on each.

With ``--ember-backend`` the run also includes the conformance kit
(:mod:`ember.testing.conformance`: ember's op tables and in-place checks) on
the named backends; ``--no-ember-kit`` leaves it out.  A suite that already
imports the kit's tests (ember's own ``tests/test_kit.py``) runs them once.

The plugin loads in every pytest session of an environment where ember is installed, so it keeps to ember's
own tests (files in ember's source tree or package) unless one of its options (or ``EMBER_TEST_BACKENDS``) is
given, or the project opts in with ``ember_device = true`` in its pytest configuration (as the plugins that
``python -m ember.plugins new`` writes do): another project's ``device`` fixture is never parametrized, and a
fixture named ``device`` that a project defines itself is always left alone.
"""
from __future__ import annotations

import functools
import os

import pytest

import ember
from ember.plugins import REGISTRY

from . import SESSION_BACKENDS

# the kit is found by path and its tests by name, so the op tables load only when a run asks for the kit
_KIT_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "conformance.py")
_KIT_MODULE, _KIT_TESTS = "ember.testing.conformance", ("test_op_table", "test_inplace_semantics")


def pytest_addoption(parser):
    group = parser.getgroup("ember")
    group.addoption("--ember-backend", "--backend", dest="ember_backend", action="append", default=None,
                    help="run tensor tests on this ember backend only (repeatable; default: every available one)")
    group.addoption("--no-ember-kit", dest="ember_kit", action="store_false", default=True,
                    help="with --ember-backend, do not add ember's conformance kit to the run")
    parser.addini("ember_device", type="bool", default=False,
                  help="parametrize this project's tests that take a `device` argument over ember's backends")


def _kit_path():
    return _KIT_FILE


def _ember_roots():
    """Where ember's own tests live: its package, and the source checkout around it (when there is one)."""
    package = os.path.dirname(os.path.abspath(ember.__file__))
    checkout = os.path.dirname(package)
    roots = [package]
    if os.path.isfile(os.path.join(checkout, "pyproject.toml")) and os.path.isdir(os.path.join(checkout, "tests")):
        roots.append(checkout)
    return [os.path.normcase(r) + os.sep for r in roots]


def _asked(config) -> bool:
    """Whether this run asked for ember's behaviour through its options, its environment or the project's
    ``ember_device`` setting."""
    return bool(config.getoption("ember_backend", default=None) or os.environ.get("EMBER_TEST_BACKENDS")
                or config.getini("ember_device"))


def _ours(path) -> bool:
    p = os.path.normcase(os.path.abspath(str(path))) + os.sep
    return any(p.startswith(r) for r in _ember_roots())


@functools.cache
def _ember_project(rootpath: str) -> bool:
    """Whether the session runs in ember's own repository (its tests against an installed, non-editable ember)."""
    try:
        with open(os.path.join(rootpath, "pyproject.toml"), encoding="utf-8") as f:
            return 'name = "ember"' in f.read()
    except OSError:
        return False


def _acts(config, path) -> bool:
    return _asked(config) or _ours(path) or _ember_project(str(config.rootpath))


def pytest_configure(config):
    SESSION_BACKENDS[:] = _selected(config) or []
    if config.getoption("ember_backend", default=None) and config.getoption("ember_kit", default=True):
        path = _kit_path()
        if path not in config.args:
            config.args.append(path)


def pytest_collection_modifyitems(session, config, items):
    if not (config.getoption("ember_backend", default=None) and config.getoption("ember_kit", default=True)):
        return
    kit_file = os.path.normcase(os.path.abspath(_kit_path()))

    def in_kit(item):
        return os.path.normcase(os.path.abspath(str(item.path))) == kit_file

    def runs_kit_test(item):  # a kit test the suite imported (ember's own tests/test_kit.py does)
        fn = getattr(item, "function", None)
        return getattr(fn, "__module__", None) == _KIT_MODULE and getattr(fn, "__name__", None) in _KIT_TESTS

    if any(runs_kit_test(i) and not in_kit(i) for i in items):
        items[:] = [i for i in items if not in_kit(i)]


def _selected(config):
    names = config.getoption("ember_backend", default=None)
    if not names and os.environ.get("EMBER_TEST_BACKENDS"):
        names = [n for n in os.environ["EMBER_TEST_BACKENDS"].split(",") if n]
    return names


def pytest_generate_tests(metafunc):
    if "device" not in metafunc.fixturenames or "device" in getattr(metafunc, "_arg2fixturedefs", {}):
        return  # no device argument, or the project's own fixture of that name
    if not _acts(metafunc.config, metafunc.definition.path):
        return
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


def pytest_terminal_summary(terminalreporter):
    """One line saying how many tests skipped because the PyTorch oracle is absent, and why (ember's runs only)."""
    config = terminalreporter.config
    if not _acts(config, config.rootpath):
        return
    n = sum(1 for r in terminalreporter.stats.get("skipped", []) if "could not import 'torch'" in str(r.longrepr))
    if n:
        why = ("scripts/test.sh could not reach a package index to install it" if os.environ.get(
            "EMBER_ORACLE_UNREACHABLE") else "bash scripts/test.sh installs it")
        terminalreporter.write_line(f"{n} tests skipped: the PyTorch oracle (torch 2.13.0, CPU build) is not "
                                    f"installed; {why}", yellow=True)

"""Entry-point loading, in fresh interpreters with test-time distributions on ``sys.path``.

Each distribution is a ``<name>-<version>.dist-info`` folder (METADATA + entry_points.txt in group
``ember``) beside its module: installing is putting the folder on the path, uninstalling is deleting it.
"""
import os
import subprocess
import sys
import textwrap

import pytest

OP_PLUGIN = """
import ember
from ember.plugins import hookimpl

class Twice(ember.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, g):
        return 2 * g

@hookimpl
def ember_ops(registry):
    registry.add_op("{ns}", "twice", Twice, method="{method}")
"""

KERNEL_PLUGIN = """
import numpy as np
from ember.plugins import hookimpl

def fast_exp(x):
    return np.exp(x)

@hookimpl
def ember_kernels(registry):
    registry.add_kernel("cpu", "exp", fast_exp, priority=5)
"""


def install(root, dist, module, source, entry=None):
    """A distribution ``dist`` 1.0 whose ``ember`` entry point ``entry`` loads ``module``."""
    (root / f"{module}.py").write_text(textwrap.dedent(source))
    info = root / f"{dist.replace('-', '_')}-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(f"[ember]\n{entry or module} = {module}\n")
    return info


def run(root, code, **env):
    full = {k: v for k, v in os.environ.items() if k != "EMBER_DISABLE_PLUGIN_AUTOLOAD"}
    full.update(PYTHONPATH=os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")]), **env)
    return subprocess.run([sys.executable, "-W", "always", "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, timeout=120, env=full, cwd=root)


USE_OP = """
import ember
from ember.testing import check_op
x = ember.tensor([1.0, 2.0], requires_grad=True)
print("twice", ember.ops.tw.twice(x).tolist(), x.twice2().tolist())
check_op(ember.ops.tw.twice, [(x,)], reference=lambda t: t * 2, devices=["cpu"])
print("kit ok")
"""


def test_installed_op_appears_and_uninstall_removes_it(tmp_path):
    info = install(tmp_path, "fake-twice", "fake_twice", OP_PLUGIN.format(ns="tw", method="twice2"))
    res = run(tmp_path, USE_OP)
    assert "twice [2.0, 4.0] [2.0, 4.0]" in res.stdout and "kit ok" in res.stdout, res.stderr
    import shutil

    shutil.rmtree(info)
    res = run(tmp_path, "import ember; print(hasattr(ember.ops, 'tw'), hasattr(ember.Tensor, 'twice2'))")
    assert res.stdout.split() == ["False", "False"], res.stderr


def test_plugin_raising_at_import_only_warns(tmp_path):
    install(tmp_path, "fake-broken", "fake_broken", "raise ImportError('needs libfoo')\n")
    res = run(tmp_path, "import ember; print('ok', ember.ones(2).sum().item())")
    assert "ok 2.0" in res.stdout
    assert "PluginWarning" in res.stderr and "'fake_broken' from distribution fake-broken 1.0 failed to load" \
        in res.stderr and "needs libfoo" in res.stderr


def test_clash_between_distributions_names_both(tmp_path):
    install(tmp_path, "fake-a", "fake_a", OP_PLUGIN.format(ns="tw", method="twice_a"))
    install(tmp_path, "fake-b", "fake_b", OP_PLUGIN.format(ns="tw", method="twice_b"))
    res = run(tmp_path, "import ember; print(ember.ops.tw.twice(ember.ones(1)).item())")
    assert res.stdout.strip() == "2.0", res.stderr
    assert "op clash: ember.ops.tw.twice is provided by plugin 'fake_a' (distribution fake-a 1.0) and plugin " \
           "'fake_b' (distribution fake-b 1.0)" in res.stderr


def test_autoload_can_be_disabled(tmp_path):
    install(tmp_path, "fake-twice", "fake_twice", OP_PLUGIN.format(ns="tw", method="twice2"))
    res = run(tmp_path, """
        import ember, fake_twice
        print(hasattr(ember.ops, "tw"), sorted(ember.plugins.REGISTRY.backends))
        ember.plugins.register(fake_twice)
        print(ember.ops.tw.twice(ember.ones(1)).item())
    """, EMBER_DISABLE_PLUGIN_AUTOLOAD="1")
    lines = res.stdout.splitlines()
    assert lines[0] == "False ['cpu', 'meta']" and lines[1] == "2.0", res.stdout + res.stderr  # meta: core's own


def test_info_shows_plugins_ops_and_overrides(tmp_path):
    install(tmp_path, "fake-twice", "fake_twice", OP_PLUGIN.format(ns="tw", method="twice2"))
    install(tmp_path, "fake-fastexp", "fake_fastexp", KERNEL_PLUGIN)
    res = run(tmp_path, "import runpy; runpy.run_module('ember.info', run_name='__main__')")
    out = res.stdout
    assert res.returncode == 0, res.stderr
    for text in ("backends:", "cpu        available, 1 device(s); numpy", "fake_twice       fake-twice 1.0",
                 "ember.ops.tw.twice", "Tensor.twice2",
                 "cpu:exp served by plugin 'fake_fastexp' (distribution fake-fastexp 1.0) at priority 5"):
        assert text in out, out


def test_plugin_imported_before_ember_registers_when_its_import_ends(tmp_path):
    """``import plugin`` before ``import ember``: ember's import starts inside the plugin's, before the plugin
    has defined its hooks; the plugin is registered once its own import ends, hooks and all."""
    install(tmp_path, "fake-twice", "fake_twice", OP_PLUGIN.format(ns="tw", method="twice2"))
    install(tmp_path, "fake-fastexp", "fake_fastexp", "import ember\n" + KERNEL_PLUGIN)
    res = run(tmp_path, """
        import fake_twice, fake_fastexp
        import ember
        print(ember.ops.tw.twice(ember.ones(2)).tolist(), ember.ones(1).twice2().item())
        print(ember.plugins.REGISTRY.kernel_source[("cpu", "exp")])
    """)
    assert res.stdout.splitlines() == ["[2.0, 2.0] 2.0", "('fake_fastexp', 5)"], res.stdout + res.stderr
    assert "PluginWarning" not in res.stderr, res.stderr


@pytest.mark.parametrize("autoload", ["0", "1"])
def test_cpu_backend_imported_before_ember(tmp_path, autoload):
    res = run(tmp_path, """
        import ember_cpu_numpy.threads
        import ember
        print(ember.ones(3).sum().item(), ember.get_default_device())
    """, EMBER_DISABLE_PLUGIN_AUTOLOAD=autoload)
    assert res.stdout.split() == ["3.0", "cpu"], res.stdout + res.stderr
    assert "PluginWarning" not in res.stderr, res.stderr  # registered once, not once deferred and once more


def test_plugin_failing_after_it_imported_ember_is_left_out(tmp_path):
    install(tmp_path, "fake-late", "fake_late", OP_PLUGIN.format(ns="late", method="twice3")
            + "\nraise ImportError('needs libbar')\n")
    res = run(tmp_path, """
        try:
            import fake_late
        except ImportError as exc:
            print("import failed:", exc)
        import ember
        print(hasattr(ember.ops, "late"), hasattr(ember.Tensor, "twice3"), ember.ones(2).sum().item())
    """)
    assert res.stdout.splitlines() == ["import failed: needs libbar", "False False 2.0"], res.stdout + res.stderr


@pytest.mark.parametrize("module", ["ember_swish", "ember_se", "ember_array_api"])
def test_example_plugins_are_separate_distributions(module):
    import importlib.metadata as md

    root = os.path.join(os.path.dirname(__file__), "..", "plugins", module)
    assert os.path.exists(os.path.join(root, "pyproject.toml"))
    eps = [ep for ep in md.entry_points(group="ember") if ep.value == module]
    if not eps:
        pytest.skip(f"{module} is not installed here (scripts/test.sh and tox install plugins/*)")
    import ember

    assert eps[0].name in ember.plugins.REGISTRY.plugins

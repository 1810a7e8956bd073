"""The files of a new op plugin, as written by ``python -m ember.plugins new NAME``.

``$name`` is the plugin's name (the entry point and ``ember.ops.$name``), ``$package`` its import package
(``ember_$name``) and ``$dist`` its distribution (``ember-$name``).
"""
from __future__ import annotations

FILES = {
    "pyproject.toml": '''\
[build-system]
requires = ["setuptools>=68"]
build-backend = "setuptools.build_meta"

[project]
name = "$dist"
version = "0.1.0"
description = "The $name op plugin for ember"
requires-python = ">=3.9"
dependencies = ["ember"]

[project.optional-dependencies]
test = ["pytest>=7"]

# ember finds the plugin through this entry point group; the value is the module holding the hooks
[project.entry-points.ember]
$name = "$package"

[tool.setuptools.packages.find]
where = ["src"]

[tool.pytest.ini_options]
testpaths = ["tests"]
filterwarnings = ["error"]
ember_device = true   # tests taking `device` run on every ember backend installed
''',
    "README.md": '''\
# $dist

An op plugin for ember: `ember.ops.$name.softsign(x)` (also `x.softsign()`), `x / (1 + |x|)`.

    pip install -e ".[test]"
    pytest                      # runs on every ember backend installed (cpu, cuda, ...)

Edit `src/$package/__init__.py`; `docs/plugins.md` in ember's repository describes the hooks and what a kernel
receives and returns.
''',
    "src/$package/__init__.py": '''\
"""The $name op plugin: ``ember.ops.$name.softsign(x) = x / (1 + |x|)``.

``forward`` is a kernel: it receives the input tensors' device arrays (``numpy.ndarray`` on ``cpu``,
``cupy.ndarray`` on ``cuda``, the backend's array type elsewhere) and returns one array of the same library.
Written against the array's namespace (``ember.backend.array_namespace(x)``: ``numpy``, ``cupy``, ...), one
kernel serves every backend.
``backward`` is written with ember ops, so the op differentiates to any order on every backend.
"""
from ember.backend import array_namespace
from ember.plugins import hookimpl


def softsign_kernel(x):
    xp = array_namespace(x)
    return x / (1 + xp.abs(x))


def softsign_backward(ctx, grad):
    (x,) = ctx.inputs          # the op's input tensors (ctx.output is its output)
    d = 1 + x.abs()
    return grad / (d * d)


@hookimpl
def ember_ops(registry):
    registry.add_op("$name", "softsign", forward=softsign_kernel, backward=softsign_backward, method=True)
''',
    "tests/test_$name.py": '''\
"""The $name plugin through ember's public API and conformance kit, on every backend."""
import ember
from ember.testing import check_op


def reference(t):
    return t / (1 + t.abs())


def test_softsign_passes_the_kit(device):          # `device` runs the test on every available backend
    x = ember.tensor([[-2.0, -0.5, 0.0], [0.3, 1.0, 3.0]], device=device, requires_grad=True)
    check_op(ember.ops.$name.softsign, [(x,), (x[:, 1:],)], reference=reference, devices=[device])


def test_softsign_method_and_gradient(device):
    x = ember.tensor([-1.0, 2.0], device=device, requires_grad=True)
    x.softsign().sum().backward()
    ember.testing.assert_close(x.grad, 1 / (1 + x.detach().abs()) ** 2)
''',
}

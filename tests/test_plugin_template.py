"""``python -m ember.plugins new NAME``: the generated plugin installs into a fresh venv and passes its own tests."""
import site
import subprocess
import sys
import venv

import pytest

import ember
from ember.plugins import hookimpl, register, unregister
from ember.plugins.__main__ import main, new
from ember.testing import OpCheckError, check_op


def test_generated_plugin_installs_and_passes_its_tests(tmp_path):
    p = subprocess.run([sys.executable, "-m", "ember.plugins", "new", "demo", "--dir", str(tmp_path)],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    root = tmp_path / "ember-demo"
    assert sorted(str(f.relative_to(root)) for f in root.rglob("*") if f.is_file()) == [
        "README.md", "pyproject.toml", "src/ember_demo/__init__.py", "tests/test_demo.py"]
    env = tmp_path / "venv"
    venv.create(env, with_pip=False)
    py = env / "bin" / "python"
    inner = subprocess.run([str(py), "-c", "import site; print(site.getsitepackages()[0])"], capture_output=True,
                           text=True, check=True).stdout.strip()
    parents = [*site.getsitepackages(), site.getusersitepackages()]  # this interpreter's packages: ember, pytest
    with open(f"{inner}/ember_parent.pth", "w") as f:
        f.write("".join(f"import site; site.addsitedir({d!r})\n" for d in parents))
    inst = subprocess.run([str(py), "-m", "pip", "install", "-q", "--no-deps", "-e", str(root)],
                          capture_output=True, text=True, timeout=300)
    assert inst.returncode == 0, inst.stderr
    run = subprocess.run([str(py), "-m", "pytest", "-q", "-p", "no:cacheprovider", str(root)], capture_output=True,
                         text=True, timeout=300, cwd=root)
    assert run.returncode == 0, run.stdout + run.stderr
    assert " passed" in run.stdout and "failed" not in run.stdout


def test_bad_names_and_existing_directories_are_refused(tmp_path, capsys):
    for bad in ("Demo", "my-op", "class"):
        with pytest.raises(ValueError, match="lower-case Python identifier"):
            new(bad, tmp_path)
    new("twice", tmp_path)
    with pytest.raises(FileExistsError, match="already exists"):
        new("twice", tmp_path)
    with pytest.raises(SystemExit):
        main(["new", "twice", "--dir", str(tmp_path)])
    assert "already exists" in capsys.readouterr().err


def _wrong_backward(ctx, grad):
    return grad * 3


class _Plugin:
    @hookimpl
    def ember_ops(self, registry):
        registry.add_op("tmpl_check", "twice", forward=lambda x: x * 2, backward=_wrong_backward)


def test_check_op_failures_name_the_plugin_op(device):
    register(_Plugin(), name="tmpl-check")
    try:
        x = ember.tensor([1.0, -2.0], device=device, requires_grad=True)
        with pytest.raises(OpCheckError, match=r"^ember\.ops\.tmpl_check\.twice: sample 0 .* gradcheck failed"):
            check_op(ember.ops.tmpl_check.twice, [(x,)], devices=[device])
    finally:
        unregister("tmpl-check")

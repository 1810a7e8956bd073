"""The platform surface libraries build on: version identity, module behaviour under the alias, torchvision,
pytree, compiler names, constants and small names, and the behaviours libraries rely on, each against PyTorch."""
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import ember


def under_alias(code, cwd=None):
    """Run ``code`` in a fresh process where ``import torch`` is ember; its stdout lines."""
    prog = "import ember.torch_compat as _tc\n_tc.install()\n" + textwrap.dedent(code)
    p = subprocess.run([sys.executable, "-c", prog], capture_output=True, text=True, timeout=120, cwd=cwd)
    assert p.returncode == 0, p.stderr
    return p.stdout.splitlines()


# ------------------------------------------------------------------------------------------- version identity
def test_version_compares_as_pytorchs(torch):
    from ember.version import TorchVersion, __version__

    assert __version__ == "2.13.0" and isinstance(__version__, str)
    ref = torch.torch_version.TorchVersion("2.13.0")
    for other in [(2, 0), (2, 13), (2, 13, 0), (2, 14), "2.2", "2.13", "2.13.0", "2.13.1", "2.13.0rc1", "10.0",
                  "3.0.dev0", "2.13.0.post1"]:
        for op in ("__lt__", "__le__", "__eq__", "__ge__", "__gt__"):
            assert getattr(__version__, op)(other) == getattr(ref, op)(other), (other, op)
    assert TorchVersion("2.1.0+cu121") < "2.13" and TorchVersion("2.13.0a0") < (2, 13)
    assert {__version__: 1}["2.13.0"] == 1  # hashes as its text
    import ember.version as v

    assert (v.debug, v.hip) == (False, None) and isinstance(v.git_version, str)
    assert ember.__version__ == "0.1.0"  # ember's own release number outside the alias


def test_alias_reports_pytorchs_version_and_metadata():
    out = under_alias("""
        import importlib.metadata as md, torch, torch.version, torchvision
        print(torch.__version__, type(torch.__version__).__name__, torch.version.__version__, torch.version.cuda)
        print(md.version("torch"), md.version("torchvision"), torchvision.__version__)
        print(md.distribution("torch").metadata["Name"], torch.__version__ >= (2, 1), torch.__version__ < "2.2")
        import ember
        print(ember.__version__)
        """)
    assert out == ["2.13.0 TorchVersion 2.13.0 None", "2.13.0 0.28.0 0.28.0", "torch True False", "0.1.0"]


# --------------------------------------------------------------------------------------- the alias as a module
def test_alias_modules_show_members_and_survive_monkeypatch():
    out = under_alias("""
        import torch, torch.distributions, ember, pytest
        print("Normal" in vars(torch.distributions), torch.distributions.__dict__["Normal"] is torch.distributions.Normal,
              "Tensor" in vars(torch))
        mp = pytest.MonkeyPatch()
        fake = object()
        mp.setattr(torch, "cuda", fake)
        mp.setattr(torch, "ones", fake)
        mp.setattr(torch.nn, "Linear", fake)
        print(torch.cuda is fake, ember.cuda is fake, torch.ones is fake, ember.nn.Linear is fake)
        mp.undo()
        import ember.cuda
        print(ember.cuda is sys.modules["ember.cuda"], torch.cuda.is_available is ember.cuda.is_available,
              torch.ones is ember.ones, torch.nn.Linear is ember.nn.Linear)
        """.replace("import torch,", "import sys, torch,"))
    assert out == ["True True True", "True True True True", "True True True True"]


def test_torchvision_resolves_to_ember_vision():
    out = under_alias("""
        import sys, torchvision, torchvision.transforms as T
        from torchvision import models, datasets
        import ember_vision
        print(T.Compose is ember_vision.transforms.Compose, models.resnet18 is ember_vision.models.resnet18,
              datasets is torchvision.datasets)
        for get in (lambda: torchvision.no_such_name, lambda: torchvision.models.no_such_model):
            try:
                get()
            except AttributeError as e:
                print(e)
        try:
            import torchvision.no_such_module
        except ModuleNotFoundError as e:
            print(e)
        print(any(getattr(m, "__file__", None) and "site-packages/torchvision" in m.__file__
                  for m in list(sys.modules.values())))
        """)
    assert out == ["True True True", "ember has no torchvision.no_such_name yet",
                   "ember has no torchvision.models.no_such_model yet", "ember has no torchvision.no_such_module yet",
                   "False"]


# ------------------------------------------------------------------------------------------ the pytest plugin
def test_pytest_plugin_leaves_other_projects_device_fixture_alone(tmp_path):
    (tmp_path / "conftest.py").write_text(textwrap.dedent("""
        import pytest

        @pytest.fixture(params=["mine-a", "mine-b"])
        def device(request):
            return request.param
        """))
    (tmp_path / "test_theirs.py").write_text("def test_device(device):\n    print('DEVICE', device)\n")
    sub = tmp_path / "plain"
    sub.mkdir()
    (sub / "test_nofixture.py").write_text("def test_device(device):\n    pass\n")

    def pytest_run(*args, cwd):
        return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-s", "-q", *args],
                              capture_output=True, text=True, timeout=120, cwd=cwd)

    p = pytest_run("test_theirs.py", cwd=tmp_path)
    assert p.returncode == 0, p.stdout + p.stderr
    assert p.stdout.count("DEVICE mine-") == 2 and "DEVICE cpu" not in p.stdout
    p = pytest_run("test_nofixture.py", cwd=sub)  # ember does not invent a device fixture for another project
    assert p.returncode != 0 and "fixture 'device' not found" in p.stdout
    p = pytest_run("test_nofixture.py", "--ember-backend", "cpu", "--no-ember-kit", cwd=sub)  # asked for: it acts
    assert p.returncode == 0 and "1 passed" in p.stdout, p.stdout

"""``python -m ember run``: unmodified PyTorch-style programs run on ember, and PyTorch itself is never loaded."""
import pathlib
import subprocess
import sys

import pytest

PROGRAMS = pathlib.Path(__file__).parent / "torch_programs"


def run(*args, timeout=120):
    return subprocess.run([sys.executable, "-m", "ember", "run", *args], capture_output=True, text=True,
                          timeout=timeout)


@pytest.mark.parametrize("program, args, expect", [
    ("mlp_dataloader.py", ["--device"], "accuracy "),
    ("cnn_from_torch_import.py", [], "reloaded equal True"),
    ("custom_function.py", [], "grad ok True; total 285"),
])
def test_pytorch_style_program_runs_on_ember(device, program, args, expect):
    p = run(str(PROGRAMS / program), *args, device)
    assert p.returncode == 0, p.stderr
    assert expect in p.stdout
    if program == "mlp_dataloader.py":
        assert float(p.stdout.split()[1]) >= 0.9
    assert "pytorch loaded: False" in p.stdout


def test_missing_names_say_ember_has_no_name_yet(tmp_path):
    prog = tmp_path / "gap.py"
    prog.write_text(
        "import torch, torch.nn\n"
        "for get in (lambda: torch.no_such_op, lambda: torch.nn.NoSuchLayer):\n"
        "    try:\n        get()\n    except AttributeError as e:\n        print(e)\n"
        "try:\n    import torch.no_such_module\nexcept ModuleNotFoundError as e:\n    print(e)\n"
        "import ember, torch.nn.functional as F\n"
        "print(F.relu is ember.nn.functional.relu, torch.Tensor is ember.Tensor, torch.nn.functional is F)\n")
    p = run(str(prog))
    assert p.returncode == 0, p.stderr
    assert p.stdout.splitlines() == ["ember has no torch.no_such_op yet", "ember has no torch.nn.NoSuchLayer yet",
                                     "ember has no torch.no_such_module yet", "True True True"]


def test_program_arguments_and_module_mode(tmp_path):
    (tmp_path / "argprog.py").write_text("import sys, torch\nprint(sys.argv, torch.__name__)\n")
    p = run(str(tmp_path / "argprog.py"), "--lr", "0.1")
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == f"[{str(tmp_path / 'argprog.py')!r}, '--lr', '0.1'] torch"
    p = subprocess.run([sys.executable, "-m", "ember", "run", "-m", "argprog", "x"], capture_output=True, text=True,
                       timeout=60, cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert p.stdout.split("]")[1].strip() == "torch" and p.stdout.split("]")[0].endswith("'x'")


def test_install_in_process_then_uninstall():
    code = ("import sys, ember.torch_compat as tc\n"
            "tc.install(); import torch, torch.nn as nn\n"
            "nn.Linear(2, 3); print(tc.installed(), type(torch.ones(1)).__module__)\n"
            "torch.some_flag = 5; import ember; print(ember.some_flag)\n"
            "tc.uninstall(); print(tc.installed(), 'torch' in sys.modules)\n")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    assert p.stdout.splitlines() == ["True ember.tensor", "5", "False False"]

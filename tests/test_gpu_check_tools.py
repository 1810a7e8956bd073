"""The tools of the prepared GPU check (scripts/gpu_check.sh): the JUnit grouper reads a real pytest report."""
import importlib.util
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location("junit_groups", ROOT / "scripts" / "junit_groups.py")
junit_groups = importlib.util.module_from_spec(spec)
spec.loader.exec_module(junit_groups)


def test_cause_masks_numbers_shapes_and_names():
    a = junit_groups.cause("RuntimeError: add: shape (3, 4) vs [5, 6] for 'x' at 0x7f00\nmore")
    b = junit_groups.cause("RuntimeError: add: shape (7, 1) vs [2, 2] for 'y' at 0xdead")
    assert a == b == "RuntimeError: add: shape (?) vs [?] for '?' at <addr>"


def test_groups_a_pytest_report(tmp_path):
    (tmp_path / "test_sample.py").write_text(
        "import pytest\n"
        "@pytest.mark.parametrize('n', [3, 5])\n"
        "def test_a(n):\n    raise RuntimeError(f'size {n} bad')\n"
        "def test_b():\n    assert 1 == 2\n"
        "def test_c():\n    pass\n")
    report = tmp_path / "r.xml"
    subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:ember",
                    str(tmp_path / "test_sample.py"), f"--junitxml={report}"], cwd=tmp_path, capture_output=True)
    out = subprocess.run([sys.executable, str(ROOT / "scripts" / "junit_groups.py"), str(report)],
                         capture_output=True, text=True, check=True).stdout
    assert "4 tests: 1 passed, 3 failed, 0 errors, 0 skipped; 2 root causes" in out
    assert out.index("## 2 x `RuntimeError: size N bad`") < out.index("## 1 x")

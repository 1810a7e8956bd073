"""The example programs run and do what they claim (short budgets)."""
import importlib.util
import os
import subprocess
import sys

import pytest

import ember


EXAMPLES = os.path.join(os.path.dirname(__file__), os.pardir, "examples")


def _example(name):
    spec = importlib.util.spec_from_file_location(f"example_{name}", os.path.join(EXAMPLES, f"{name}.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_custom_function():
    out = _example("custom_function").main()
    assert out["gradcheck"] is True
    assert out["output"] == pytest.approx(out["reference"], rel=1e-12)
    assert out["bias_grad"] == [5.0, 5.0, 5.0, 5.0]


def _state(model):
    return {k: v.detach().numpy().copy() for k, v in model.state_dict().items()}


def test_train_digits_reaches_accuracy_and_resumes_bitwise(tmp_path):
    import numpy as np

    train = _example("train_digits")
    common = ["--quiet", "--epochs", "2", "--batch-size", "32", "--checkpoint", str(tmp_path / "full.pt")]
    full = train.main(common)
    assert full["val_acc"] >= 0.85
    assert len(full["history"]["val_acc"]) == 2 and full["history"]["loss"][-1] < full["history"]["loss"][0]
    saved = ember.load(tmp_path / "full.pt")
    assert saved["epoch"] == 2 and set(saved) >= {"model", "optimizer", "scheduler", "shuffle_rng", "rng"}

    part = ["--quiet", "--epochs", "2", "--batch-size", "32", "--checkpoint", str(tmp_path / "part.pt")]
    train.main(part + ["--stop-after", "1"])
    resumed = train.main(part + ["--resume"])
    assert resumed["history"] == full["history"]
    a, b = _state(full["model"]), _state(resumed["model"])
    assert a.keys() == b.keys() and all(np.array_equal(a[k], b[k]) for k in a)


def test_read_idx_and_checksum(tmp_path):
    import gzip
    import struct

    import numpy as np

    train = _example("train_digits")
    images = np.arange(2 * 3 * 4, dtype=np.uint8).reshape(2, 3, 4)
    raw = struct.pack(">HBB3I", 0, 0x08, 3, 2, 3, 4) + images.tobytes()
    plain = tmp_path / "x-idx3-ubyte"
    plain.write_bytes(raw)
    assert np.array_equal(train.read_idx(str(plain)), images)
    packed = tmp_path / "x-idx3-ubyte.gz"
    packed.write_bytes(gzip.compress(raw))
    assert np.array_equal(train.read_idx(str(packed)), images)
    with pytest.raises(ValueError, match="MD5 checksum mismatch"):
        train.read_idx(str(packed), md5="0" * 32)
    plain.write_bytes(raw[:-3])
    with pytest.raises(ValueError, match="expected 24 values"):
        train.read_idx(str(plain))


def test_finetune_freezes_features_and_uses_group_learning_rates():
    out = _example("finetune").main(epochs=2)
    assert out["frozen_unchanged"] is True
    assert out["group_lrs"] == [0.01, 0.05]
    assert out["head_acc"] > 0.4 and out["final_acc"] > 0.8


def test_train_digits_reads_mnist_idx_files(tmp_path):
    import struct

    import numpy as np

    train = _example("train_digits")
    rng = np.random.default_rng(0)

    def write(name, array, code):
        header = struct.pack(f">HBB{array.ndim}I", 0, code, array.ndim, *array.shape)
        (tmp_path / name).write_bytes(header + array.tobytes())

    for prefix, n in (("train", 16), ("t10k", 8)):
        write(f"{prefix}-images-idx3-ubyte", rng.integers(0, 256, (n, 28, 28), dtype=np.uint8), 0x08)
        write(f"{prefix}-labels-idx1-ubyte", rng.integers(0, 10, n, dtype=np.uint8), 0x08)
    out = train.main(["--quiet", "--epochs", "1", "--batch-size", "8", "--mnist-dir", str(tmp_path),
                      "--checkpoint", str(tmp_path / "m.pt")])
    assert out["model"].fc.in_features == 32 * 7 * 7
    assert len(out["history"]["val_acc"]) == 1 and 0.0 <= out["val_acc"] <= 1.0


@pytest.mark.parametrize("name", sorted(f[:-3] for f in os.listdir(EXAMPLES) if f.endswith(".py")
                                         and not f.startswith("_")))
def test_every_example_has_help(name):
    p = subprocess.run([sys.executable, os.path.join(EXAMPLES, f"{name}.py"), "--help"], capture_output=True,
                       text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert p.stdout.startswith("usage:")


def test_train_digits_resume_after_finish_and_missing_checkpoint(tmp_path, capsys):
    train = _example("train_digits")
    ck = str(tmp_path / "d.pt")
    done = train.main(["--quiet", "--epochs", "1", "--checkpoint", ck])
    assert f"saved to {os.path.abspath(ck)}" in capsys.readouterr().out
    again = train.main(["--quiet", "--epochs", "1", "--checkpoint", ck, "--resume"])
    assert "already complete" in capsys.readouterr().out
    assert again["history"] == done["history"]
    with pytest.raises(SystemExit, match="no checkpoint at .*nope.pt to resume from"):
        train.main(["--epochs", "1", "--checkpoint", str(tmp_path / "nope.pt"), "--resume"])


def test_piped_progress_is_one_line_per_epoch(tmp_path):
    p = subprocess.run([sys.executable, os.path.join(EXAMPLES, "train_digits.py"), "--epochs", "2",
                        "--checkpoint", str(tmp_path / "d.pt")], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    assert p.stderr == ""  # no progress bar when stderr is not a terminal
    assert [line.split()[0] for line in p.stdout.splitlines()] == ["scikit-learn", "epoch", "epoch", "checkpoint"]


def test_a_missing_extra_is_one_clear_line(monkeypatch):
    sys.path.insert(0, EXAMPLES)
    from _needs import need

    monkeypatch.setattr(sys, "argv", ["train_digits.py"])
    with pytest.raises(SystemExit, match=r"^train_digits.py: needs the 'no_such_pkg' package: pip install -e "
                                         r"\"\.\[examples\]\""):
        need("no_such_pkg")


def test_train_digits_logs_to_tensorboard(tmp_path):
    pytest.importorskip("tensorboard")
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    train = _example("train_digits")
    train.main(["--quiet", "--epochs", "2", "--checkpoint", str(tmp_path / "d.pt"), "--tensorboard",
                str(tmp_path / "tb")])
    acc = EventAccumulator(str(tmp_path / "tb"), size_guidance={"scalars": 0})
    acc.Reload()
    assert [e.step for e in acc.Scalars("val/accuracy")] == [1, 2]
    assert len(acc.Scalars("train/batch_loss")) == 2 * 45  # 1437 images in batches of 32

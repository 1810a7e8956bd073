"""ember.utils.tensorboard.SummaryWriter: event files read back with TensorBoard's own reader."""
import os
import signal
import subprocess
import sys

import numpy as np
import pytest

import ember

pytest.importorskip("tensorboard")
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator  # noqa: E402
from tensorboard.util import tensor_util  # noqa: E402

from ember.utils.tensorboard import SummaryWriter  # noqa: E402


def _read(logdir):
    acc = EventAccumulator(str(logdir), size_guidance={"scalars": 0, "tensors": 0, "images": 0})
    acc.Reload()
    return acc


def test_scalars_histograms_text_images_read_back(tmp_path, device):
    x = ember.arange(12.0, device=device).reshape(3, 4)
    with SummaryWriter(tmp_path) as w:
        for step in range(3):
            w.add_scalar("loss", ember.tensor(1.0 / (step + 1), device=device), step)
        w.add_scalar("acc", 0.5, 7, new_style=True)
        w.add_histogram("weights", x, 2)
        w.add_text("note", "hello **world**", 1)
        w.add_image("img", ember.rand(3, 5, 6, device=device), 0)
        w.add_images("batch", np.zeros((4, 1, 5, 6), np.float32), 0)
    acc = _read(tmp_path)
    loss = acc.Scalars("loss")
    assert [e.step for e in loss] == [0, 1, 2]
    np.testing.assert_allclose([e.value for e in loss], [1.0, 0.5, 1 / 3], rtol=1e-6)
    assert tensor_util.make_ndarray(acc.Tensors("acc")[0].tensor_proto) == pytest.approx(0.5)
    hist = tensor_util.make_ndarray(acc.Tensors("weights")[0].tensor_proto)  # (buckets, 3): left, right, count
    assert hist[:, 2].sum() == 12 and hist[0, 0] == 0 and hist[-1, 1] == 11
    text = tensor_util.make_ndarray(acc.Tensors("note/text_summary")[0].tensor_proto)
    assert text.reshape(-1)[0] == b"hello **world**"
    img = acc.Images("img")[0]
    assert (img.height, img.width) == (5, 6) and img.encoded_image_string.startswith(b"\x89PNG")
    batch = acc.Images("batch")[0]
    assert (batch.height, batch.width) == (10, 12)  # a 2 x 2 grid


def test_hparams_and_scalars_groups(tmp_path):
    with SummaryWriter(tmp_path) as w:
        w.add_hparams({"lr": 0.1, "optim": "adam", "unused": None}, {"hparam/acc": 0.9}, run_name="trial")
        w.add_scalars("run", {"train": 1.0, "val": 2.0}, 3)
        subs = list(w._sub_writers.values())
    assert len(subs) == 2 and all(s._closed for s in subs)  # closing the writer closes its sub-runs
    trial = _read(tmp_path / "trial")
    tags = trial.Tags()
    assert "_hparams_/experiment" in tags["tensors"] and "_hparams_/session_start_info" in tags["tensors"]
    assert trial.Scalars("hparam/acc")[0].value == pytest.approx(0.9)
    assert _read(tmp_path / "run_val").Scalars("run")[0].value == 2.0


def test_unwritable_directory_raises_at_construction(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    with pytest.raises(OSError, match="cannot write TensorBoard events to"):
        SummaryWriter(blocker / "logs")


def test_events_written_before_a_crash_are_readable(tmp_path):
    code = ("import os, signal, ember\n"
            "from ember.utils.tensorboard import SummaryWriter\n"
            f"w = SummaryWriter({str(tmp_path)!r})\n"
            "for i in range(5):\n    w.add_scalar('x', float(i), i)\n"
            "os.kill(os.getpid(), signal.SIGKILL)\n")
    p = subprocess.run([sys.executable, "-c", code], timeout=120)
    assert p.returncode == -signal.SIGKILL
    assert [e.value for e in _read(tmp_path).Scalars("x")] == [0.0, 1.0, 2.0, 3.0, 4.0]
    assert len(os.listdir(tmp_path)) == 1

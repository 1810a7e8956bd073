"""examples/finetune_resnet.py on a tiny synthetic ImageFolder tree."""
import importlib.util
import os

import numpy as np
import pytest

import ember

pytest.importorskip("ember_vision")
pytest.importorskip("tqdm")
Image = pytest.importorskip("PIL.Image")

EXAMPLE = os.path.join(os.path.dirname(__file__), os.pardir, "examples", "finetune_resnet.py")


def _tree(root):
    # two classes that differ in colour, so the new head can learn them
    rng = np.random.default_rng(0)
    for cls, base in (("red", (200, 30, 30)), ("blue", (30, 30, 200))):
        os.makedirs(root / cls)
        for i in range(4):
            pixels = np.clip(np.array(base) + rng.integers(-20, 20, (20, 20, 3)), 0, 255).astype(np.uint8)
            Image.fromarray(pixels).save(root / cls / f"{i}.png")
    return root


def test_finetune_example(tmp_path, capsys):
    spec = importlib.util.spec_from_file_location("finetune_resnet", EXAMPLE)
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    root = _tree(tmp_path / "train")
    result = example.main(["--data", str(root), "--epochs", "3", "--batch-size", "8", "--image-size", "16"])
    model = result["model"]
    conv1 = model.conv1.weight
    assert result["classes"] == ["blue", "red"]
    assert result["losses"][-1] < result["losses"][0]
    assert not conv1.requires_grad and conv1.grad is None and model.fc.weight.grad is not None
    assert "epoch" not in capsys.readouterr().err  # no progress bar when stderr is not a terminal
    assert ember.is_tensor(conv1)

"""timm's canonical usage, run by the ecosystem harness under PyTorch and under ember: a model per family built by
name, its forward and a training step; and timm's own ``train.py`` training resnet18 and a tiny ViT at 32 px on a
generated ImageFolder, its logged metrics and final weights compared with the same run under PyTorch.

Neither timm's sdist nor its wheel ships ``train.py``: the harness takes it from a repository snapshot
(``python -m ember.ecosystem timm --canonical --scripts-from GIT_DIR@REF``) and names its folder in
``EMBER_ECOSYSTEM_SCRIPTS``; without it the ``train.py`` test skips. Two of its runs do not depend on either
framework's random stream: PyTorch draws the initial weights and saves them, both runs load them with
``--initial-checkpoint``; augmentation (``--no-aug``), drop-path and dropout are off; the training set is one batch,
so the loader's shuffle only reorders the images inside it. A third takes everything from ``--seed`` (``RUNS``)."""
import csv
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import torch
import timm


@pytest.mark.parametrize("name", ["resnet18", "vit_tiny_patch16_224", "convnext_atto", "efficientnet_b0"])
def test_model_forward_and_step(name):
    torch.manual_seed(0)
    model = timm.create_model(name, pretrained=False, num_classes=5, img_size=32) if name.startswith("vit") \
        else timm.create_model(name, pretrained=False, num_classes=5)
    x = torch.randn(2, 3, 32, 32)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    loss = torch.nn.functional.cross_entropy(model(x), torch.tensor([1, 3]))
    loss.backward()
    opt.step()
    assert model(x).shape == (2, 5) and loss.item() > 0


TRAIN = Path(os.environ.get("EMBER_ECOSYSTEM_SCRIPTS", "/nonexistent")) / "train.py"
_FIXED = ("--crop-pct", 1.0, "--no-aug", "--drop", 0, "--drop-path", 0, "--epochs", 3)
# name: (model, its create_model arguments, train.py's arguments beyond the common ones, optimizer steps). The first
# two start from weights PyTorch saved, without augmentation, on a training split of one batch: nothing depends on a
# random stream. The seeded run takes everything from --seed: the weights, the loader's shuffle of two batches and
# timm's default augmentation (random resized crop, flip, colour jitter, random interpolation), so it also needs
# ember's CPU generator to draw PyTorch's numbers.
RUNS = {"resnet18": ("resnet18", {}, ("--lr", 0.05, *_FIXED), 3),
        "vit_tiny_patch16_224": ("vit_tiny_patch16_224", {"img_size": 32},
                                 ("--model-kwargs", "img_size=32", "--lr", 0.01, *_FIXED), 3),
        "resnet18 seeded": ("resnet18", None, ("--lr", 0.01, "--train-split", "train8", "--epochs", 2), 4)}

# A child process running a script under PyTorch: under ember it takes the alias away and imports torchvision as
# the oracle's runs do (see ember.ecosystem); under PyTorch there is nothing to take away.
_ORACLE = """
import runpy, sys
compat = sys.modules.get("ember.torch_compat")
if compat is not None:
    compat.uninstall()
    from ember.ecosystem import LIBRARIES
    exec(LIBRARIES["timm"].oracle_prelude)
sys.argv = sys.argv[1:]
runpy.run_path(sys.argv[0], run_name="__main__")
"""

_INITIAL_WEIGHTS = """
import json, sys, torch, timm
torch.manual_seed(0)
model = timm.create_model(sys.argv[1], num_classes=2, **json.loads(sys.argv[3]))
torch.save(model.state_dict(), sys.argv[2])
"""


def _python(script, *args, oracle: bool) -> str:
    """Run ``script`` with ``args`` under PyTorch (``oracle``) or as this process runs (under the alias when the
    harness put it in place); return its output, failing with its tail."""
    cmd = [sys.executable, "-c", _ORACLE, str(script)] if oracle else [sys.executable, str(script)]
    proc = subprocess.run([*cmd, *map(str, args)], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
    return proc.stdout + proc.stderr


@pytest.fixture(scope="module")
def image_folder(tmp_path_factory):
    """Two classes of 32 px noise PNGs, each class brighter in its own channel: train splits of one batch (4) and of
    two (8), and a validation split of two (8)."""
    from PIL import Image

    root = tmp_path_factory.mktemp("images")
    rs = np.random.RandomState(0)
    for split, per_class in (("train", 2), ("train8", 4), ("validation", 4)):
        for channel, cls in enumerate(("a", "b")):
            folder = root / split / cls
            folder.mkdir(parents=True)
            for i in range(per_class):
                pixels = rs.randint(0, 256, size=(32, 32, 3)).astype(np.float64)
                pixels[..., channel] = pixels[..., channel] * 0.5 + 127
                Image.fromarray(pixels.astype(np.uint8)).save(folder / f"{i}.png")
    return root


def train_numbers(run: str, data: Path, initial, output: Path, *, oracle: bool) -> dict:
    """Run timm's ``train.py`` as ``RUNS[run]`` says (from the weights in ``initial`` unless None); the losses it
    logs per step, its summary rows and its final weights."""
    model, _, extra, _ = RUNS[run]
    args = ["--data-dir", data, "--model", model, "--num-classes", 2, "--img-size", 32, "--batch-size", 4,
            "--validation-batch-size", 4, "--workers", 0, "--warmup-epochs", 0, "--seed", 0, "--device", "cpu",
            "--opt", "sgd", "--log-interval", 1, "--output", output, "--experiment", "run", "--checkpoint-hist", 1,
            *(("--initial-checkpoint", initial) if initial else ()), *extra]
    log = _python(TRAIN, *args, oracle=oracle)
    with (output / "run" / "summary.csv").open() as f:
        rows = [{k: float(v) for k, v in row.items()} for row in csv.DictReader(f)]
    state = torch.load(output / "run" / "last.pth.tar", map_location="cpu", weights_only=False)["state_dict"]
    return {"rows": rows, "steps": [float(x) for x in re.findall(r"Train: .*?Loss: (\S+) \(", log)],
            "weights": {k: v.detach().double().numpy() for k, v in state.items() if v.is_floating_point()}}


@pytest.mark.timeout(900)
@pytest.mark.parametrize("run", RUNS)
def test_train_script_matches_pytorch(run, image_folder, tmp_path):
    if not TRAIN.exists():
        pytest.skip("timm's train.py is in neither its sdist nor its wheel: run python -m ember.ecosystem timm "
                    "--canonical --scripts-from GIT_DIR@REF")
    model, kwargs, _, steps = RUNS[run]
    initial = None
    if kwargs is not None:
        initial, make = tmp_path / "initial.pth", tmp_path / "initial_weights.py"
        make.write_text(_INITIAL_WEIGHTS)
        _python(make, model, initial, json.dumps(kwargs), oracle=True)
    ref = train_numbers(run, image_folder, initial, tmp_path / "oracle", oracle=True)
    ours = train_numbers(run, image_folder, initial, tmp_path / "ours", oracle=False)
    gap = max(float(np.abs(v - ref["weights"][k]).max()) for k, v in ours["weights"].items())
    print(f"\n{run}: PyTorch {ref['steps']} {ref['rows']}\n{run}: this run {ours['steps']} {ours['rows']}\n"
          f"largest weight difference {gap:.3g}")
    assert len(ours["steps"]) == len(ref["steps"]) == steps
    np.testing.assert_allclose(ours["steps"], ref["steps"], rtol=1e-2)  # as logged: three significant digits
    assert [r["epoch"] for r in ours["rows"]] == [r["epoch"] for r in ref["rows"]]
    for key in ("eval_top1", "eval_top5", "lr"):
        assert [r[key] for r in ours["rows"]] == [r[key] for r in ref["rows"]], key
    for key in ("train_loss", "eval_loss"):
        np.testing.assert_allclose([r[key] for r in ours["rows"]], [r[key] for r in ref["rows"]], rtol=1e-4,
                                   atol=1e-6, err_msg=key)
    assert ours["weights"].keys() == ref["weights"].keys()
    for key, value in ours["weights"].items():
        np.testing.assert_allclose(value, ref["weights"][key], rtol=1e-3, atol=1e-5, err_msg=key)

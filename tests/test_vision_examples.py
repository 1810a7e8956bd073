"""PyTorch-example-style programs under ``python -m ember run``: ``import torchvision`` resolves to ember-vision.

The programs here are ember's own, written against the same API surface as ``pytorch/examples``'
``mnist/main.py`` (MNIST with ``download=True`` over files already in ``../data/MNIST/raw``, ToTensor +
Normalize, Adadelta + StepLR, ``torch.accelerator``) and ``imagenet/main.py`` (ImageFolder with
RandomResizedCrop/Resize/CenterCrop, ``torchvision.models.__dict__[arch]``). Set ``PYTORCH_EXAMPLES`` to a
checkout of ``pytorch/examples`` to also run its unmodified scripts (skipped otherwise; nothing is fetched); its
other programs run in ``tests/test_pytorch_examples.py``.
"""
import json
import os
import struct
import subprocess
import sys
import textwrap

import numpy as np
import pytest

pytest.importorskip("ember_vision")
Image = pytest.importorskip("PIL.Image")

EXAMPLES = os.environ.get("PYTORCH_EXAMPLES", "")


def write_idx(path, array):
    """Write a uint8 array as an (uncompressed) IDX file, the format of MNIST's files."""
    with open(path, "wb") as f:
        f.write(bytes([0, 0, 0x08, array.ndim]) + struct.pack(f">{array.ndim}i", *array.shape))
        f.write(np.ascontiguousarray(array, np.uint8).tobytes())


def mnist_raw(root, n_train=96, n_test=40):
    """A synthetic MNIST under ``root/MNIST/raw`` in torchvision's extracted layout."""
    raw = root / "MNIST" / "raw"
    raw.mkdir(parents=True)
    rng = np.random.default_rng(0)
    for prefix, n in (("train", n_train), ("t10k", n_test)):
        write_idx(raw / f"{prefix}-images-idx3-ubyte", rng.integers(0, 256, (n, 28, 28), dtype=np.uint8))
        write_idx(raw / f"{prefix}-labels-idx1-ubyte", rng.integers(0, 10, n).astype(np.uint8))
    return raw


def image_tree(root, classes=("n01", "n02"), per_class=2):
    """A tiny ImageNet-style ``train``/``val`` ImageFolder of odd-sized JPEGs."""
    rng = np.random.default_rng(1)
    for split in ("train", "val"):
        for cls in classes:
            (root / split / cls).mkdir(parents=True)
            for i in range(per_class):
                pixels = rng.integers(0, 256, (20, 28, 3), dtype=np.uint8)
                Image.fromarray(pixels).save(root / split / cls / f"{i}.JPEG")
    return root


def ember_run(script, args, cwd, timeout=400):
    """``python -m ember run script args`` in ``cwd``; returns stdout, failing the test with stderr."""
    env = {k: v for k, v in os.environ.items() if k != "EMBER_DEVICE"}
    proc = subprocess.run([sys.executable, "-m", "ember", "run", str(script), *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return proc.stdout


MNIST_PROGRAM = textwrap.dedent("""
    import argparse, json
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
    import torch.optim as optim
    from torch.optim.lr_scheduler import StepLR
    from torchvision import datasets, transforms

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(1, 8, 3, 1)
            self.conv2 = nn.Conv2d(8, 16, 3, 1)
            self.dropout = nn.Dropout(0.25)
            self.fc = nn.Linear(16 * 12 * 12, 10)

        def forward(self, x):
            x = F.max_pool2d(F.relu(self.conv2(F.relu(self.conv1(x)))), 2)
            x = self.fc(torch.flatten(self.dropout(x), 1))
            return F.log_softmax(x, dim=1)

    p = argparse.ArgumentParser()
    p.add_argument("--batch-size", type=int, default=32)
    args = p.parse_args()
    torch.manual_seed(1)
    device = torch.accelerator.current_accelerator() if torch.accelerator.is_available() else torch.device("cpu")
    tf = transforms.Compose([transforms.ToTensor(), transforms.Normalize((0.1307,), (0.3081,))])
    train = datasets.MNIST("../data", train=True, download=True, transform=tf)
    test = datasets.MNIST("../data", train=False, transform=tf)
    loader = torch.utils.data.DataLoader(train, batch_size=args.batch_size, shuffle=True)
    model = Net().to(device)
    opt = optim.Adadelta(model.parameters(), lr=1.0)
    sched = StepLR(opt, step_size=1, gamma=0.7)
    model.train()
    losses = []
    for data, target in loader:
        data, target = data.to(device), target.to(device)
        opt.zero_grad()
        loss = F.nll_loss(model(data), target)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    sched.step()
    model.eval()
    correct = 0
    with torch.no_grad():
        for data, target in torch.utils.data.DataLoader(test, batch_size=16):
            pred = model(data.to(device)).argmax(dim=1, keepdim=True)
            correct += pred.eq(target.to(device).view_as(pred)).sum().item()
    torch.save(model.state_dict(), "mnist_cnn.pt")
    x0, y0 = train[0]
    print(json.dumps({"losses": losses, "correct": correct, "n_test": len(test), "lr": sched.get_last_lr(),
                      "x0": [list(x0.shape), x0.dtype == torch.float32], "y0": type(y0).__name__,
                      "module": type(train).__module__}))
""")


def test_mnist_program_under_ember_run(tmp_path):
    mnist_raw(tmp_path / "data")
    work = tmp_path / "work"
    work.mkdir()
    (work / "main.py").write_text(MNIST_PROGRAM)
    out = json.loads(ember_run(work / "main.py", ["--batch-size", "32"], work).strip().splitlines()[-1])
    assert len(out["losses"]) == 3 and all(np.isfinite(out["losses"]))
    assert out["n_test"] == 40 and 0 <= out["correct"] <= 40
    assert out["lr"] == [pytest.approx(0.7)]
    assert out["x0"] == [[1, 28, 28], True] and out["y0"] == "int"
    assert out["module"].startswith("ember_vision.datasets")
    assert (work / "mnist_cnn.pt").stat().st_size > 0
    assert not any(p.name.endswith((".gz", ".part")) for p in (tmp_path / "data" / "MNIST" / "raw").iterdir())


def test_mnist_download_true_uses_extracted_files(tmp_path):
    """``download=True`` over the extracted IDX files reads them and never reaches the network."""
    from ember_vision import datasets
    raw = mnist_raw(tmp_path, n_train=5, n_test=3)
    ds = datasets.MNIST(str(tmp_path), train=False, download=True)
    assert len(ds) == 3 and sorted(os.listdir(raw)) == sorted(
        ["train-images-idx3-ubyte", "train-labels-idx1-ubyte", "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"])
    img, label = ds[2]
    assert img.size == (28, 28) and img.mode == "L" and 0 <= label < 10


def test_mnist_missing_root_names_the_file(tmp_path):
    from ember_vision import datasets
    with pytest.raises(RuntimeError, match="download=True") as info:
        datasets.MNIST(str(tmp_path), train=True, download=False)
    assert "train-images-idx3-ubyte" in str(info.value)


IMAGENET_PROGRAM = textwrap.dedent("""
    import json, os, sys
    import torch
    import torch.nn as nn
    import torchvision.datasets as datasets
    import torchvision.models as models
    import torchvision.transforms as transforms

    root = sys.argv[1]
    normalize = transforms.Normalize(mean=[0.485, 0.456, 0.406], std=[0.229, 0.224, 0.225])
    train = datasets.ImageFolder(os.path.join(root, "train"), transforms.Compose([
        transforms.RandomResizedCrop(32), transforms.RandomHorizontalFlip(), transforms.ToTensor(), normalize]))
    val = datasets.ImageFolder(os.path.join(root, "val"), transforms.Compose([
        transforms.Resize(40), transforms.CenterCrop(32), transforms.ToTensor(), normalize]))
    model = models.__dict__["resnet18"](num_classes=len(train.classes))
    crit = nn.CrossEntropyLoss()
    opt = torch.optim.SGD(model.parameters(), 0.01, momentum=0.9, weight_decay=1e-4)
    losses = []
    for images, target in torch.utils.data.DataLoader(train, batch_size=2, shuffle=True, num_workers=0,
                                                      pin_memory=True):
        loss = crit(model(images), target)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    model.eval()
    with torch.no_grad():
        shapes = [list(model(x).shape) for x, _ in torch.utils.data.DataLoader(val, batch_size=2)]
    print(json.dumps({"losses": losses, "shapes": shapes, "classes": train.classes}))
""")


def test_imagenet_program_under_ember_run(tmp_path):
    image_tree(tmp_path / "data")
    (tmp_path / "main.py").write_text(IMAGENET_PROGRAM)
    out = json.loads(ember_run(tmp_path / "main.py", [str(tmp_path / "data")], tmp_path).strip().splitlines()[-1])
    assert out["classes"] == ["n01", "n02"]
    assert len(out["losses"]) == 2 and all(np.isfinite(out["losses"]))
    assert out["shapes"] == [[2, 2], [2, 2]]


def _example(name):
    path = os.path.join(EXAMPLES, name, "main.py")
    if not (EXAMPLES and os.path.isfile(path)):
        pytest.skip(f"set PYTORCH_EXAMPLES to a pytorch/examples checkout to run its {name}/main.py")
    return path


def test_pytorch_examples_mnist_unmodified(tmp_path):
    script = _example("mnist")
    mnist_raw(tmp_path / "data", n_train=64, n_test=32)
    (tmp_path / "work").mkdir()
    out = ember_run(script, ["--epochs", "1", "--batch-size", "32", "--test-batch-size", "32"], tmp_path / "work")
    assert "Train Epoch: 1" in out and "Test set: Average loss" in out


@pytest.mark.slow
def test_pytorch_examples_imagenet_unmodified(tmp_path):
    script = _example("imagenet")
    image_tree(tmp_path)
    out = ember_run(script, ["-a", "resnet18", "--epochs", "1", "-b", "2", "--workers", "0", "-p", "1", "."],
                    tmp_path, timeout=900)
    assert "Epoch: [0][2/2]" in out and "Acc@1" in out

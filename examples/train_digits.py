"""Train a small CNN on handwritten digits, with checkpoints and exact resume.

    pip install -e ".[examples]" && python examples/train_digits.py

Data: MNIST from local IDX files when you have them (``--mnist-dir``; the four files of
http://yann.lecun.com/exdb/mnist/, gzipped or not, checked against their MD5 sums), else the 8x8
digits that ship inside scikit-learn (1797 images, no download).  Each epoch prints the validation
accuracy and writes a checkpoint; ``--resume`` continues a run bit for bit as if it had never
stopped (same seed, same batches, same updates).  ``--plot`` saves the loss and accuracy curves
(needs matplotlib).
"""
from __future__ import annotations

import argparse
import gzip
import hashlib
import os
import struct
import sys
import time

import numpy as np

import ember
import ember.nn as nn
import ember.nn.functional as F
from ember.utils.data import DataLoader, TensorDataset

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _needs import need  # noqa: E402

# MD5 sums of the gzipped IDX files as distributed
MNIST_FILES = {
    "train_images": ("train-images-idx3-ubyte", "f68b3c2dcbeaaa9fbdd348bbdeb94873"),
    "train_labels": ("train-labels-idx1-ubyte", "d53e105ee54ea40749a09fcbcd1e9432"),
    "test_images": ("t10k-images-idx3-ubyte", "9fb629c4189551a2d022fa330f9573f3"),
    "test_labels": ("t10k-labels-idx1-ubyte", "ec29112dd5afa0611ce80d1b7f02629c"),
}
IDX_TYPES = {0x08: np.uint8, 0x09: np.int8, 0x0B: ">i2", 0x0C: ">i4", 0x0D: ">f4", 0x0E: ">f8"}


# ---------------------------------------------------------------------------- data
def read_idx(path: str, md5: str | None = None) -> np.ndarray:
    """An IDX file (optionally gzipped) as a NumPy array; ``md5`` is checked for ``.gz`` files."""
    with open(path, "rb") as fh:
        raw = fh.read()
    if path.endswith(".gz"):
        if md5 is not None and hashlib.md5(raw).hexdigest() != md5:
            raise ValueError(f"{path}: MD5 checksum mismatch (expected {md5}); the file is corrupted or not MNIST")
        raw = gzip.decompress(raw)
    zero, type_code, ndim = struct.unpack(">HBB", raw[:4])
    if zero != 0 or type_code not in IDX_TYPES:
        raise ValueError(f"{path}: not an IDX file (magic {raw[:4].hex()})")
    shape = struct.unpack(f">{ndim}I", raw[4:4 + 4 * ndim])
    data = np.frombuffer(raw, dtype=IDX_TYPES[type_code], offset=4 + 4 * ndim)
    if data.size != int(np.prod(shape)):
        raise ValueError(f"{path}: expected {int(np.prod(shape))} values for shape {shape}, found {data.size}")
    return data.reshape(shape)


def find_mnist(directory: str) -> dict | None:
    """The paths of the four MNIST files in ``directory`` (``.gz`` or plain), or None if any is missing."""
    found = {}
    for key, (stem, md5) in MNIST_FILES.items():
        for name, checksum in ((stem + ".gz", md5), (stem, None)):
            path = os.path.join(directory, name)
            if os.path.exists(path):
                found[key] = (path, checksum)
                break
        else:
            return None
    return found


def load_data(mnist_dir: str | None, verify: bool, seed: int):
    """``(x_train, y_train, x_val, y_val, source)`` as float32 images in [0, 1] of shape (N, 1, H, W)."""
    files = find_mnist(mnist_dir) if mnist_dir else None
    if files is not None:
        arrays = {k: read_idx(p, md5 if verify else None) for k, (p, md5) in files.items()}
        scale = 255.0
        x_tr, y_tr = arrays["train_images"], arrays["train_labels"]
        x_va, y_va = arrays["test_images"], arrays["test_labels"]
        source = f"MNIST from {mnist_dir}"
    else:
        digits = need("sklearn.datasets").load_digits()
        images, labels = digits.images, digits.target
        order = np.random.default_rng(seed).permutation(len(labels))
        cut = int(0.8 * len(labels))
        x_tr, y_tr = images[order[:cut]], labels[order[:cut]]
        x_va, y_va = images[order[cut:]], labels[order[cut:]]
        scale = 16.0
        source = "scikit-learn 8x8 digits" + (f" (no MNIST files in {mnist_dir})" if mnist_dir else "")

    def prep(x, y):
        x = (np.asarray(x, np.float32) / scale)[:, None]
        return ember.from_numpy(np.ascontiguousarray(x)), ember.from_numpy(np.asarray(y, np.int64))

    return (*prep(x_tr, y_tr), *prep(x_va, y_va), source)


# ---------------------------------------------------------------------------- model
class DigitNet(nn.Module):
    """Two conv-relu-pool blocks and a linear classifier."""

    def __init__(self, size: int):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 16, 3, padding=1)
        self.conv2 = nn.Conv2d(16, 32, 3, padding=1)
        self.fc = nn.Linear(32 * (size // 4) ** 2, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        return self.fc(x.flatten(1))


def evaluate(model, loader, device) -> float:
    model.eval()
    correct = total = 0
    with ember.no_grad():
        for x, y in loader:
            pred = model(x.to(device)).argmax(1)
            correct += int((pred == y.to(device)).sum().item())
            total += y.shape[0]
    model.train()
    return correct / total


# ---------------------------------------------------------------------------- training
def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--epochs", type=int, default=12)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--lr", type=float, default=3e-3)
    p.add_argument("--workers", type=int, default=0, help="DataLoader worker processes")
    p.add_argument("--device", default="cuda" if ember.cuda.is_available() else "cpu")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--mnist-dir", default=os.environ.get("MNIST_DIR"), help="directory with the MNIST IDX files")
    p.add_argument("--no-verify", action="store_true", help="skip the MD5 check of gzipped MNIST files")
    p.add_argument("--checkpoint", default="checkpoints/digits.pt", help="written after every epoch")
    p.add_argument("--resume", action="store_true", help="continue from --checkpoint")
    p.add_argument("--stop-after", type=int, default=None,
                   help="stop after this many epochs in this run, as if interrupted (continue with --resume)")
    p.add_argument("--tensorboard", metavar="DIR", default=None,
                   help="log the loss, accuracy and learning rate to TensorBoard event files in DIR "
                        "(needs the tensorboard extra; view with tensorboard --logdir DIR)")
    p.add_argument("--plot", default=None, help="save loss/accuracy curves to this image (needs matplotlib)")
    p.add_argument("--quiet", action="store_true", help="no progress bar (there is none when output is not a terminal)")
    return p.parse_args(argv)


def train(args) -> dict:
    """Run the training described by ``args``; returns the history and the final model."""
    ember.manual_seed(args.seed)
    device = ember.device(args.device)
    x_tr, y_tr, x_va, y_va, source = load_data(args.mnist_dir, not args.no_verify, args.seed)
    model = DigitNet(x_tr.shape[-1]).to(device)
    optimizer = ember.optim.Adam(model.parameters(), lr=args.lr)
    scheduler = ember.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=args.epochs)
    shuffle = ember.Generator().manual_seed(args.seed)
    train_loader = DataLoader(TensorDataset(x_tr, y_tr), batch_size=args.batch_size, shuffle=True,
                              generator=shuffle, num_workers=args.workers)
    val_loader = DataLoader(TensorDataset(x_va, y_va), batch_size=256)
    history = {"loss": [], "val_acc": []}
    start_epoch = 0
    if args.resume:
        if not os.path.exists(args.checkpoint):
            raise SystemExit(f"train_digits.py: no checkpoint at {args.checkpoint} to resume from "
                             "(run without --resume to start, or give --checkpoint)")
        ckpt = ember.load(args.checkpoint, map_location=device)
        model.load_state_dict(ckpt["model"])
        optimizer.load_state_dict(ckpt["optimizer"])
        scheduler.load_state_dict(ckpt["scheduler"])
        shuffle.set_state(ckpt["shuffle_rng"].cpu())  # generator states are CPU tensors; map_location moved them
        ember.set_rng_state(ckpt["rng"].cpu())
        history, start_epoch = ckpt["history"], ckpt["epoch"]
        if start_epoch >= args.epochs:
            print(f"already complete: {args.checkpoint} holds all {start_epoch} epochs "
                  f"(val acc {history['val_acc'][-1]:.4f}); raise --epochs to train further")
            return {"history": history, "model": model, "val_acc": history["val_acc"][-1]}
    print(f"{source}: {len(y_tr)} training / {len(y_va)} validation images of {tuple(x_tr.shape[1:])}, "
          f"device {device}, epochs {start_epoch + 1}..{args.epochs}; checkpoints to {args.checkpoint}")
    tqdm = need("tqdm").tqdm
    writer = None
    if args.tensorboard:
        need("tensorboard", extra="tensorboard")
        from ember.utils.tensorboard import SummaryWriter

        writer = SummaryWriter(args.tensorboard)
        print(f"TensorBoard events to {os.path.abspath(args.tensorboard)}")

    last = args.epochs if args.stop_after is None else min(args.epochs, start_epoch + args.stop_after)
    for epoch in range(start_epoch, last):
        t0, seen, total = time.perf_counter(), 0, 0.0
        # disable=None: no bar when stderr is not a terminal (piped output stays one line per epoch)
        bar = tqdm(train_loader, desc=f"epoch {epoch + 1}/{args.epochs}", disable=True if args.quiet else None,
                   leave=False)
        for i, (x, y) in enumerate(bar):
            x, y = x.to(device), y.to(device)
            optimizer.zero_grad()
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            optimizer.step()
            seen += y.shape[0]
            total += loss.item() * y.shape[0]
            if writer is not None:
                writer.add_scalar("train/batch_loss", loss.item(), epoch * len(train_loader) + i)
            bar.set_postfix(loss=f"{loss.item():.3f}", img_s=f"{seen / (time.perf_counter() - t0):.0f}")
        scheduler.step()
        acc = evaluate(model, val_loader, device)
        history["loss"].append(total / seen)
        history["val_acc"].append(acc)
        if writer is not None:
            writer.add_scalar("train/loss", total / seen, epoch + 1)
            writer.add_scalar("val/accuracy", acc, epoch + 1)
            writer.add_scalar("lr", optimizer.param_groups[0]["lr"], epoch + 1)
        print(f"epoch {epoch + 1:2d}  loss {total / seen:.4f}  val acc {acc:.4f}  "
              f"({seen / (time.perf_counter() - t0):.0f} img/s)")
        save_checkpoint(args.checkpoint, epoch + 1, model, optimizer, scheduler, shuffle, history)
    if writer is not None:
        writer.close()
    print(f"checkpoint of epoch {last} saved to {os.path.abspath(args.checkpoint)}")
    if args.plot:
        plot(history, args.plot)
    return {"history": history, "model": model, "val_acc": history["val_acc"][-1] if history["val_acc"] else None}


def save_checkpoint(path, epoch, model, optimizer, scheduler, shuffle, history) -> None:
    """Everything a bit-exact resume needs: weights, optimizer and scheduler state, RNG states."""
    if os.path.dirname(path):
        os.makedirs(os.path.dirname(path), exist_ok=True)
    ember.save({"epoch": epoch, "model": model.state_dict(), "optimizer": optimizer.state_dict(),
                "scheduler": scheduler.state_dict(), "shuffle_rng": shuffle.get_state(),
                "rng": ember.get_rng_state(), "history": history}, path)


def plot(history: dict, path: str) -> None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed: no plot (pip install matplotlib)", file=sys.stderr)
        return
    fig, (a, b) = plt.subplots(1, 2, figsize=(9, 3.5))
    epochs = range(1, len(history["loss"]) + 1)
    a.plot(epochs, history["loss"], marker="o")
    a.set(title="training loss", xlabel="epoch")
    b.plot(epochs, history["val_acc"], marker="o", color="tab:green")
    b.set(title="validation accuracy", xlabel="epoch")
    fig.tight_layout()
    fig.savefig(path)
    print(f"curves saved to {path}")


def main(argv=None) -> dict:
    return train(parse_args(argv))


if __name__ == "__main__":
    main()

"""examples/vae.py: a few epochs lower the negative ELBO, the files are written, and the gradient of the
ELBO reaches the encoder through ``rsample``."""
import importlib.util
import os

import numpy as np
import pytest

import ember

EXAMPLES = os.path.join(os.path.dirname(__file__), os.pardir, "examples")


def _vae():
    pytest.importorskip("sklearn")
    spec = importlib.util.spec_from_file_location("example_vae", os.path.join(EXAMPLES, "vae.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_vae_trains_and_writes_samples(tmp_path, capsys):
    vae = _vae()
    out = vae.main(["--quiet", "--epochs", "3", "--batch-size", "64", "--out", str(tmp_path)])
    hist = out["history"]
    assert len(hist["train"]) == 3 and hist["train"][-1] < hist["train"][0] and hist["val"][-1] < hist["val"][0]
    npz = tmp_path / "vae_samples.npz"
    assert f"wrote {npz}" in capsys.readouterr().out
    data = np.load(npz)
    assert data["samples"].shape == (10, 64) and data["reconstructions"].shape == (10, 64)
    assert ((data["samples"] >= 0) & (data["samples"] <= 1)).all()


def test_vae_elbo_gradient_reaches_encoder():
    vae = _vae()
    ember.manual_seed(0)
    model = vae.VAE(64, 16, 2)
    x = ember.rand(5, 64)
    model.loss(x).backward()
    enc = model.encoder[0].weight.grad
    assert enc is not None and float(enc.abs().sum()) > 0


def test_vae_help(capsys):
    vae = _vae()
    with pytest.raises(SystemExit):
        vae.main(["--help"])
    assert "--out" in capsys.readouterr().out

"""A variational autoencoder on handwritten digits, written with ``ember.distributions``.

    pip install -e ".[examples]" && python examples/vae.py --epochs 30

The encoder maps an image to a diagonal Normal posterior q(z|x); a latent is drawn with ``rsample`` (the
reparameterisation trick, so the ELBO's gradient reaches the encoder), the decoder gives Bernoulli logits
p(x|z) for each pixel, and the ELBO is ``log p(x|z) - KL(q(z|x) || N(0, I))`` with ``kl_divergence``.

Data: the 8x8 digits that ship inside scikit-learn (1797 images, no download), pixels scaled to [0, 1].
Each epoch prints the training loss (negative ELBO per image) and the validation loss.  At the end the
program writes, into ``--out``, ``vae_samples.npz`` (decoded draws from the prior, reconstructions of
validation images and the per-epoch history) and, with ``--plot`` (needs matplotlib), ``vae_samples.png``.
"""
from __future__ import annotations

import argparse
import os
import sys

import numpy as np

import ember
import ember.nn as nn
from ember.distributions import Bernoulli, Independent, Normal, kl_divergence


def load_digits(seed: int):
    """``(x_train, x_val)``: float32 images flattened to 64 values in [0, 1], an 80/20 split."""
    from sklearn.datasets import load_digits as sk_digits

    x = sk_digits().images.reshape(-1, 64).astype(np.float32) / 16.0
    order = np.random.default_rng(seed).permutation(len(x))
    cut = int(0.8 * len(x))
    return ember.from_numpy(np.ascontiguousarray(x[order[:cut]])), ember.from_numpy(np.ascontiguousarray(
        x[order[cut:]]))


class VAE(nn.Module):
    """An MLP encoder to (mean, log-scale) of q(z|x) and an MLP decoder to pixel logits."""

    def __init__(self, pixels: int = 64, hidden: int = 128, latent: int = 8):
        super().__init__()
        self.latent = latent
        self.encoder = nn.Sequential(nn.Linear(pixels, hidden), nn.ReLU(), nn.Linear(hidden, 2 * latent))
        self.decoder = nn.Sequential(nn.Linear(latent, hidden), nn.ReLU(), nn.Linear(hidden, pixels))

    def posterior(self, x):
        loc, log_scale = self.encoder(x).chunk(2, dim=-1)
        return Independent(Normal(loc, log_scale.exp()), 1)

    def likelihood(self, z):
        # pixel intensities in [0, 1] scored as Bernoulli "soft" outcomes: the usual binary cross entropy
        return Independent(Bernoulli(logits=self.decoder(z), validate_args=False), 1)

    def prior(self, batch: int, device=None):
        zeros = ember.zeros(batch, self.latent, device=device)
        return Independent(Normal(zeros, ember.ones_like(zeros)), 1)

    def loss(self, x):
        """The negative ELBO, averaged over the batch."""
        q = self.posterior(x)
        z = q.rsample()
        elbo = self.likelihood(z).log_prob(x) - kl_divergence(q, self.prior(x.shape[0], x.device))
        return -elbo.mean()


def parse_args(argv=None):
    p = argparse.ArgumentParser(description="Train a small VAE on the scikit-learn 8x8 digits.")
    p.add_argument("--epochs", type=int, default=30, help="passes over the training set (default 30)")
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--latent", type=int, default=8, help="latent dimensions (default 8)")
    p.add_argument("--hidden", type=int, default=128, help="hidden units of encoder and decoder (default 128)")
    p.add_argument("--lr", type=float, default=3e-3)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--device", default="cpu", help="ember device to train on (default cpu)")
    p.add_argument("--out", default=".", help="directory for vae_samples.npz (and .png with --plot)")
    p.add_argument("--plot", action="store_true", help="also save a PNG grid of samples (needs matplotlib)")
    p.add_argument("--quiet", action="store_true", help="print only where the files went")
    return p.parse_args(argv)


def save_plot(path, samples, recon, originals):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = [("prior samples", samples), ("validation images", originals), ("reconstructions", recon)]
    fig, axes = plt.subplots(len(rows), 10, figsize=(10, 3.3))
    for r, (title, images) in enumerate(rows):
        for c in range(10):
            axes[r, c].imshow(images[c].reshape(8, 8), cmap="gray_r", vmin=0, vmax=1)
            axes[r, c].axis("off")
        axes[r, 0].set_title(title, fontsize=8, loc="left")
    fig.savefig(path, dpi=100)
    plt.close(fig)


def main(argv=None) -> dict:
    args = parse_args(argv)
    say = (lambda *a: None) if args.quiet else print
    ember.manual_seed(args.seed)
    device = ember.device(args.device)
    x_train, x_val = load_digits(args.seed)
    x_train, x_val = x_train.to(device), x_val.to(device)
    model = VAE(64, args.hidden, args.latent).to(device)
    opt = ember.optim.Adam(model.parameters(), lr=args.lr)
    shuffle = np.random.default_rng(args.seed)
    history = {"train": [], "val": []}
    for epoch in range(1, args.epochs + 1):
        model.train()
        order = ember.from_numpy(shuffle.permutation(len(x_train))).to(device)
        total = 0.0
        for start in range(0, len(x_train), args.batch_size):
            batch = x_train[order[start:start + args.batch_size]]
            loss = model.loss(batch)
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += float(loss) * len(batch)
        model.eval()
        with ember.no_grad():
            val = float(model.loss(x_val))
        history["train"].append(total / len(x_train))
        history["val"].append(val)
        say(f"epoch {epoch:3d}  train -ELBO {history['train'][-1]:8.3f}  val -ELBO {val:8.3f}")

    with ember.no_grad():
        samples = ember.sigmoid(model.decoder(model.prior(10, device).sample())).cpu().numpy()
        recon = ember.sigmoid(model.decoder(model.posterior(x_val[:10]).mean)).cpu().numpy()
    os.makedirs(args.out, exist_ok=True)
    npz = os.path.abspath(os.path.join(args.out, "vae_samples.npz"))
    np.savez(npz, samples=samples, reconstructions=recon, originals=x_val[:10].cpu().numpy(),
             train_loss=np.array(history["train"]), val_loss=np.array(history["val"]))
    print(f"wrote {npz}")
    files = [npz]
    if args.plot:
        png = os.path.abspath(os.path.join(args.out, "vae_samples.png"))
        try:
            save_plot(png, samples, recon, x_val[:10].cpu().numpy())
        except ImportError:
            print("--plot needs matplotlib (pip install matplotlib, or the 'examples' extra); no PNG written")
        else:
            print(f"wrote {png}")
            files.append(png)
    return {"history": history, "model": model, "files": files}


if __name__ == "__main__":
    main(sys.argv[1:])

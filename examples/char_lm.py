"""A character-level language model (LSTM or a small Transformer) on a text file.

    python examples/char_lm.py [--text FILE] [--model lstm|transformer] [--steps 300]

Without --text it trains on the opening of *Alice's Adventures in Wonderland*, bundled with ember.
It prints the validation perplexity as training goes, keeps the checkpoint with the best validation loss
(``--checkpoint``), stops early once validation stops improving (``--patience`` evaluations), and samples text
from the best model at the end. ``--resume`` continues a stopped run from its checkpoint.
"""
import argparse
import math
import os
import time

import ember
import ember.nn as nn
import ember.nn.functional as F


class LSTMModel(nn.Module):
    def __init__(self, vocab, hidden=128, layers=2, dropout=0.1):
        super().__init__()
        self.embed = nn.Embedding(vocab, hidden)
        self.rnn = nn.LSTM(hidden, hidden, layers, dropout=dropout, batch_first=True)
        self.head = nn.Linear(hidden, vocab)

    def forward(self, x, state=None):
        h, state = self.rnn(self.embed(x), state)
        return self.head(h), state


class TransformerModel(nn.Module):
    def __init__(self, vocab, d_model=96, nhead=4, layers=2, context=64, dropout=0.1):
        super().__init__()
        self.embed = nn.Embedding(vocab, d_model)
        self.pos = nn.Parameter(ember.randn(context, d_model) * 0.02)
        layer = nn.TransformerEncoderLayer(d_model, nhead, 4 * d_model, dropout, batch_first=True, norm_first=True)
        self.encoder = nn.TransformerEncoder(layer, layers)
        self.head = nn.Linear(d_model, vocab)

    def forward(self, x, state=None):
        T = x.shape[1]
        mask = nn.Transformer.generate_square_subsequent_mask(T, device=x.device)
        h = self.encoder(self.embed(x) + self.pos[:T], mask=mask)
        return self.head(h), None


def batches(data, seq_len, batch_size, gen):
    # the generator's device draws the starts; the windows are cut where the data lives
    starts = ember.randint(0, len(data) - seq_len - 1, (batch_size,), generator=gen, device=gen.device).to(data.device)
    idx = starts.unsqueeze(1) + ember.arange(seq_len + 1, device=data.device)
    chunk = data[idx]
    return chunk[:, :-1], chunk[:, 1:]


@ember.no_grad()
def perplexity(model, data, seq_len):
    model.eval()
    n = (len(data) - 1) // seq_len
    x = data[: n * seq_len].reshape(n, seq_len)
    y = data[1: n * seq_len + 1].reshape(n, seq_len)
    logits, _ = model(x)
    loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1))
    model.train()
    return math.exp(loss.item())


@ember.no_grad()
def sample(model, stoi, itos, prompt, length, context, temperature=0.8):
    model.eval()
    ids = [stoi.get(c, 0) for c in prompt]
    for _ in range(length):
        x = ember.tensor([ids[-context:]])
        logits, _ = model(x)
        probs = F.softmax(logits[0, -1] / temperature, -1)
        ids.append(int(ember.multinomial(probs, 1).item()))
    return "".join(itos[i] for i in ids)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--text", help="a UTF-8 text file (default: the bundled Alice excerpt)")
    ap.add_argument("--model", choices=["lstm", "transformer"], default="lstm")
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--seq-len", type=int, default=64)
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--sample-len", type=int, default=200)
    ap.add_argument("--device", default=None)
    ap.add_argument("--eval-every", type=int, default=None, help="steps between evaluations (default steps/10)")
    ap.add_argument("--patience", type=int, default=3,
                    help="stop after this many evaluations without a better validation loss (0: never)")
    ap.add_argument("--checkpoint", default="checkpoints/char_lm.pt", help="the best model so far, and the state "
                                                                           "--resume needs")
    ap.add_argument("--resume", action="store_true", help="continue from --checkpoint")
    args = ap.parse_args(argv)

    if args.device:
        ember.set_default_device(args.device)
    ember.manual_seed(args.seed)
    path = args.text or ember.data.path("alice.txt")
    with open(path, encoding="utf-8") as f:
        text = f.read()
    chars = sorted(set(text))
    stoi = {c: i for i, c in enumerate(chars)}
    data = ember.tensor([stoi[c] for c in text])
    split = int(0.9 * len(data))
    train, val = data[:split], data[split:]
    vocab = len(chars)
    model = LSTMModel(vocab) if args.model == "lstm" else TransformerModel(vocab, context=args.seq_len)
    opt = ember.optim.Adam(model.parameters(), lr=args.lr)
    gen = ember.Generator().manual_seed(args.seed)
    state = {"step": 0, "best": math.inf, "bad": 0, "history": [], "stopped": False}
    if args.resume:
        if not os.path.exists(args.checkpoint):
            raise SystemExit(f"char_lm.py: no checkpoint at {args.checkpoint} to resume from "
                             "(run without --resume to start, or give --checkpoint)")
        ckpt = ember.load(args.checkpoint)
        model.load_state_dict(ckpt["last_model"])
        opt.load_state_dict(ckpt["optimizer"])
        gen.set_state(ckpt["gen"])
        state = ckpt["state"]
        if state["stopped"] or state["step"] >= args.steps:
            print(f"already complete: {args.checkpoint} ended at step {state['step']} (best val perplexity "
                  f"{math.exp(state['best']):.2f})")
            return state["history"]
    print(f"{len(text)} characters, vocabulary {vocab}, model {args.model}, "
          f"{sum(p.numel() for p in model.parameters())} parameters; uniform perplexity {vocab}; "
          f"best model to {args.checkpoint}")
    t0 = time.time()
    history = state["history"]
    every = args.eval_every or max(1, args.steps // 10)
    for step in range(state["step"] + 1, args.steps + 1):
        x, y = batches(train, args.seq_len, args.batch_size, gen)
        logits, _ = model(x)
        loss = F.cross_entropy(logits.reshape(-1, vocab), y.reshape(-1))
        opt.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        if step % every == 0 or step == args.steps:
            ppl = perplexity(model, val, args.seq_len)
            history.append(ppl)
            better = math.log(ppl) < state["best"]
            state.update(step=step, best=min(state["best"], math.log(ppl)), bad=0 if better else state["bad"] + 1)
            state["stopped"] = step < args.steps and args.patience > 0 and state["bad"] >= args.patience
            print(f"step {step:4d}  train loss {loss.item():.3f}  val perplexity {ppl:.2f}"
                  f"{'  (best)' if better else ''}  ({time.time() - t0:.1f}s)")
            save(args.checkpoint, model, opt, gen, state, better)
            if state["stopped"]:
                print(f"stopping early: no better validation loss in {args.patience} evaluations")
                break
    model.load_state_dict(ember.load(args.checkpoint)["best_model"])
    print(f"best val perplexity {math.exp(state['best']):.2f}; best model in {os.path.abspath(args.checkpoint)}")
    print("sample:", sample(model, stoi, chars, "Alice ", args.sample_len, args.seq_len))
    return history


def save(path, model, opt, gen, state, better):
    """The best model so far, and the last state (model, optimizer, batch RNG) that --resume continues from."""
    if os.path.dirname(path):
        os.makedirs(os.path.dirname(path), exist_ok=True)
    best = model.state_dict() if better or not os.path.exists(path) else ember.load(path)["best_model"]
    ember.save({"best_model": best, "last_model": model.state_dict(), "optimizer": opt.state_dict(),
                "gen": gen.get_state(), "state": state}, path)


if __name__ == "__main__":
    main()

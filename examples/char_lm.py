"""A character-level language model (LSTM or a small Transformer) on a text file.

    python examples/char_lm.py [--text FILE] [--model lstm|transformer] [--steps 300]

Without --text it trains on the opening of *Alice's Adventures in Wonderland*, bundled with ember.
It prints the validation perplexity as training goes and samples text at the end.
"""
import argparse
import math
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
    starts = ember.randint(0, len(data) - seq_len - 1, (batch_size,), generator=gen)
    idx = starts.unsqueeze(1) + ember.arange(seq_len + 1)
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
    print(f"{len(text)} characters, vocabulary {vocab}, model {args.model}, "
          f"{sum(p.numel() for p in model.parameters())} parameters; uniform perplexity {vocab}")
    t0 = time.time()
    history = []
    for step in range(1, args.steps + 1):
        x, y = batches(train, args.seq_len, args.batch_size, gen)
        logits, _ = model(x)
        loss = F.cross_entropy(logits.reshape(-1, vocab), y.reshape(-1))
        opt.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        if step % max(1, args.steps // 5) == 0 or step == args.steps:
            ppl = perplexity(model, val, args.seq_len)
            history.append(ppl)
            print(f"step {step:4d}  train loss {loss.item():.3f}  val perplexity {ppl:.2f}  "
                  f"({time.time() - t0:.1f}s)")
    print("sample:", sample(model, stoi, chars, "Alice ", args.sample_len, args.seq_len))
    return history


if __name__ == "__main__":
    main()

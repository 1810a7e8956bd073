#!/usr/bin/env python3
"""Small-op programs on the CPU, ember vs PyTorch in one process, as ratios (issue 40):

  char_gpt      character GPT: 4 layers, 4 heads, width 64, block 32, batch 32, masked attention written out,
                AdamW, clip_grad_norm_; one training step
  nanogpt_sdpa  the same model with scaled_dot_product_attention at nanoGPT's CPU shape (shakespeare_char on
                the CPU: 4 layers, 4 heads, width 128, block 64, batch 12, tied embedding)
  actor_critic  one episode: 200 steps of one 4-vector observation through a small MLP with a policy and a
                value head, Categorical, log_prob and entropy; one loss, Adam
  bilstm_crf    BiLSTM-CRF: a small bidirectional LSTM, the CRF's forward algorithm and gold score (one
                small tensor op per word), a SGD step, then Viterbi decoding under no_grad
  hessian       func.hessian of tanh(W x + b), 256 inputs to 32 outputs
  jacrev2       jacrev(jacrev(...)) of the same function
  ntk           an empirical NTK: vmap(jacrev(functional_call)) of an MLP over two batches, contracted
  chain100      forward and backward of a 100-op elementwise chain on 64-element tensors
  transformer   nn.TransformerEncoder (2 layers, d 128, 4 heads, ff 512, dropout 0), sequence 32, batch 8,
                MSE, SGD step

    python bench/bench_programs.py [--quick] [--repeat 9] [--only char_gpt,ntk] [--settle 0.3] [--json out]

Both contenders start from the same weights (ember's copied into PyTorch's modules) and the same data; the
first step of each is checked to compute the same loss (or Jacobian) before anything is timed.  Randomness
that would make the two programs diverge is drawn once in NumPy and given to both (the actor-critic's
observations and actions, as a replay of one episode) and dropout is 0.  Steps are interleaved (ember,
torch, ember, ...) with ``bench_midsize``'s idle pause (``--settle``) before each timed step, through its
``run_interleaved``; the figures are medians of wall time, with the geometric mean of the ratios.
``--quick`` takes 3 timed steps after one warm-up, for a fast look.

Each row is a column per mode in ``MODES``: ``eager``, and ``compiled``, where each Module among a step's
default arguments (and a ``forward`` or ``nll`` function) goes through ``ember.compile`` and, with ``--torch-compile``,
``torch.compile`` (inductor; without the flag PyTorch stays eager in that column). The chain's and the
actor-critic's ``forward`` is their whole loss (the actor-critic's: the episode's 200 model calls,
distributions and returns), so their backward is compiled too; elsewhere the loss, backward and optimizer
step stay as written. The first call of a compiled step (capture, code generation, inductor's compilation)
is timed apart, printed as ``first call``, and its result checked against PyTorch's like the first step's.
The compiled actor-critic validates its Categorical's probabilities at the capture only (its replays check
nothing; the first ``torch.compile`` turns PyTorch's argument validation off altogether).
"""
import argparse
import json
import math
import os
import sys
import time
import types

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_midsize import blas_info, import_lib, run_interleaved  # noqa: E402

WORKLOADS = ["char_gpt", "nanogpt_sdpa", "actor_critic", "bilstm_crf", "hessian", "jacrev2", "ntk", "chain100",
             "transformer"]
TORCH_COMPILE = [False]  # --torch-compile: PyTorch's contender in the compiled column uses torch.compile


def compiled(step, lib):
    """``step`` with each Module among its default arguments, and a function named ``forward`` or ``nll`` (the
    BiLSTM-CRF's loss method), compiled."""
    if lib.__name__ == "torch" and not TORCH_COMPILE[0]:
        return step

    def prepare(d):
        return lib.compile(d) if isinstance(d, lib.nn.Module) or getattr(d, "__name__", "") in ("forward", "nll") else d
    defaults = tuple(prepare(d) for d in step.__defaults__ or ())
    return types.FunctionType(step.__code__, step.__globals__, step.__name__, defaults, step.__closure__)


MODES = {"eager": lambda step, lib: step, "compiled": compiled}  # mode -> how a step is prepared


def to_lib(lib, arr):
    """A NumPy array as a ``lib`` tensor (a copy: the two contenders never share memory)."""
    return lib.from_numpy(np.array(arr, copy=True))


def copy_weights(src, dst, lib):
    """``dst`` (a ``lib`` module) given ``src``'s parameters and buffers (an ember module of the same structure)."""
    state = {k: to_lib(lib, v.detach().numpy()) for k, v in src.state_dict().items()}
    dst.load_state_dict(state)


def value(x):
    """A loss or result as NumPy, for the check that both contenders compute the same."""
    if isinstance(x, (tuple, list)):
        return [value(v) for v in x]
    return np.asarray(x.detach().numpy(), dtype=np.float64)


# --------------------------------------------------------------------------- GPT
def gpt(lib, vocab, block, width, heads, layers, sdpa):
    """A GPT (nanoGPT's layout: pre-norm blocks, GELU MLP, tied embedding) written against ``lib``."""
    nn, F = lib.nn, lib.nn.functional

    class Attention(nn.Module):
        def __init__(self):
            super().__init__()
            self.qkv = nn.Linear(width, 3 * width)
            self.proj = nn.Linear(width, width)
            self.register_buffer("mask", lib.tril(lib.ones(block, block)).view(1, 1, block, block))

        def forward(self, x):
            B, T, C = x.size()
            q, k, v = self.qkv(x).split(width, dim=2)
            q, k, v = (t.view(B, T, heads, C // heads).transpose(1, 2) for t in (q, k, v))
            if sdpa:
                y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            else:
                att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
                att = att.masked_fill(self.mask[:, :, :T, :T] == 0, float("-inf"))
                y = F.softmax(att, dim=-1) @ v
            return self.proj(y.transpose(1, 2).contiguous().view(B, T, C))

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln1, self.ln2 = nn.LayerNorm(width), nn.LayerNorm(width)
            self.attn = Attention()
            self.mlp = nn.Sequential(nn.Linear(width, 4 * width), nn.GELU(), nn.Linear(4 * width, width))

        def forward(self, x):
            x = x + self.attn(self.ln1(x))
            return x + self.mlp(self.ln2(x))

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.wte, self.wpe = nn.Embedding(vocab, width), nn.Embedding(block, width)
            self.blocks = nn.Sequential(*[Block() for _ in range(layers)])
            self.ln_f = nn.LayerNorm(width)
            self.head = nn.Linear(width, vocab, bias=False)
            self.head.weight = self.wte.weight

        def forward(self, idx, targets):
            T = idx.size(1)
            x = self.wte(idx) + self.wpe(lib.arange(T))
            logits = self.head(self.ln_f(self.blocks(x)))
            return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))

    return GPT()


def make_gpt(libs, rng, sdpa):
    vocab, (block, width, batch) = 65, ((64, 128, 12) if sdpa else (32, 64, 32))
    idx = rng.integers(0, vocab, (batch, block))
    tgt = rng.integers(0, vocab, (batch, block))
    steps, ref = {}, None
    for name, lib in libs.items():
        lib.manual_seed(0)
        model = gpt(lib, vocab, block, width, 4, 4, sdpa)
        if ref is None:
            ref = model
        else:
            copy_weights(ref, model, lib)
        opt = lib.optim.AdamW(model.parameters(), lr=1e-3)
        x, y = to_lib(lib, idx), to_lib(lib, tgt)

        def step(model=model, opt=opt, x=x, y=y, lib=lib):
            opt.zero_grad(set_to_none=True)
            loss = model(x, y)
            loss.backward()
            lib.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            return loss
        steps[name] = step
    return steps


# --------------------------------------------------------------------------- actor-critic
def policy_net(lib):
    """The actor-critic's MLP: one hidden layer, a softmax policy head and a value head."""
    nn, F = lib.nn, lib.nn.functional

    class Policy(nn.Module):
        def __init__(self):
            super().__init__()
            self.affine = nn.Linear(4, 128)
            self.action_head = nn.Linear(128, 2)
            self.value_head = nn.Linear(128, 1)

        def forward(self, x):
            x = F.relu(self.affine(x))
            return F.softmax(self.action_head(x), dim=-1), self.value_head(x)

    return Policy()


def make_actor_critic(libs, rng, n=200):
    obs = rng.standard_normal((n, 4)).astype(np.float32)
    actions = rng.integers(0, 2, n)
    rewards = rng.random(n).astype(np.float32)
    returns, acc = [], 0.0
    for r in rewards[::-1]:
        acc = float(r) + 0.99 * acc
        returns.insert(0, acc)
    returns = np.array(returns, dtype=np.float32)
    returns = (returns - returns.mean()) / (returns.std() + 1e-8)
    steps, ref = {}, None
    for name, lib in libs.items():
        F = lib.nn.functional
        model = policy_net(lib)
        if ref is None:
            ref = model
        else:
            copy_weights(ref, model, lib)
        opt = lib.optim.Adam(model.parameters(), lr=3e-2)
        states = [lib.tensor(o.tolist()) for o in obs]  # (as from a gym observation: a list of Python floats)
        acts = [lib.tensor(int(a)) for a in actions]
        R = to_lib(lib, returns)

        def forward(model, states, acts, R, lib=lib, F=F):
            """The episode's loss (the replayed actions make it sampling-free: the compiled column compiles it
            whole)."""
            log_probs, values, entropy = [], [], 0.0
            for s, a in zip(states, acts):
                probs, v = model(s)
                dist = lib.distributions.Categorical(probs)
                log_probs.append(dist.log_prob(a))
                entropy = entropy + dist.entropy()
                values.append(v)
            values = lib.cat(values)
            advantage = R - values.detach()
            policy_loss = -(lib.stack(log_probs) * advantage).sum()
            return policy_loss + F.smooth_l1_loss(values, R) - 0.01 * entropy

        def step(model=model, opt=opt, states=states, acts=acts, R=R, forward=forward):
            loss = forward(model, states, acts, R)
            opt.zero_grad()
            loss.backward()
            opt.step()
            return loss
        steps[name] = step
    return steps


# --------------------------------------------------------------------------- BiLSTM-CRF
def bilstm_crf(lib, vocab, tags, emb, hidden):
    """A BiLSTM tagger with a CRF over its tag scores (the forward algorithm and Viterbi, word by word)."""
    nn = lib.nn

    class BiLSTMCRF(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Embedding(vocab, emb)
            self.lstm = nn.LSTM(emb, hidden // 2, bidirectional=True)
            self.to_tags = nn.Linear(hidden, tags)
            self.transitions = nn.Parameter(lib.randn(tags, tags))  # [to, from]

        def features(self, words):
            out, _ = self.lstm(self.embed(words).view(len(words), 1, -1))
            return self.to_tags(out.view(len(words), -1))

        def nll(self, words, y):
            feats = self.features(words)
            alpha = feats[0]
            for feat in feats[1:]:  # the forward algorithm, one word at a time
                alpha = lib.logsumexp(alpha.unsqueeze(0) + self.transitions, dim=1) + feat
            gold = feats[0, y[0]]
            for i in range(1, len(y)):
                gold = gold + self.transitions[y[i], y[i - 1]] + feats[i, y[i]]
            return lib.logsumexp(alpha, dim=0) - gold

        def viterbi(self, words):
            feats = self.features(words)
            score, back = feats[0], []
            for feat in feats[1:]:
                best, arg = (score.unsqueeze(0) + self.transitions).max(dim=1)
                back.append(arg.tolist())
                score = best + feat
            path = [int(score.argmax())]
            for ptr in reversed(back):
                path.append(ptr[path[-1]])
            return path[::-1]

    return BiLSTMCRF()


def make_bilstm_crf(libs, rng, vocab=30, tags=7, emb=16, hidden=16, length=20, sentences=4):
    data = [(rng.integers(0, vocab, length), rng.integers(0, tags, length)) for _ in range(sentences)]
    steps, ref = {}, None
    for name, lib in libs.items():
        lib.manual_seed(0)
        model = bilstm_crf(lib, vocab, tags, emb, hidden)
        if ref is None:
            ref = model
        else:
            copy_weights(ref, model, lib)
        opt = lib.optim.SGD(model.parameters(), lr=0.01, weight_decay=1e-4)
        batch = [(to_lib(lib, w), y.tolist()) for w, y in data]

        def step(model=model, nll=model.nll, opt=opt, batch=batch, lib=lib):
            opt.zero_grad()
            loss = sum(nll(w, y) for w, y in batch)
            loss.backward()
            opt.step()
            with lib.no_grad():
                for w, _ in batch:
                    model.viterbi(w)
            return loss
        steps[name] = step
    return steps


# --------------------------------------------------------------------------- function transforms
def make_jacobian(libs, rng, nested, n_in=256, n_out=32):
    W = (rng.standard_normal((n_out, n_in)) / math.sqrt(n_in)).astype(np.float32)
    b = rng.standard_normal(n_out).astype(np.float32)
    x = rng.standard_normal(n_in).astype(np.float32)
    steps = {}
    for name, lib in libs.items():
        Wl, bl, xl = to_lib(lib, W), to_lib(lib, b), to_lib(lib, x)

        def f(x, lib=lib, W=Wl, b=bl):
            return lib.tanh(W @ x + b)
        transform = (lambda g, lib=lib: lib.func.jacrev(lib.func.jacrev(g))) if nested else \
            (lambda g, lib=lib: lib.func.hessian(g))
        steps[name] = lambda f=f, t=transform, xl=xl: t(f)(xl)
    return steps


def make_ntk(libs, rng, batch1=16, batch2=8):
    x1 = rng.standard_normal((batch1, 32)).astype(np.float32)
    x2 = rng.standard_normal((batch2, 32)).astype(np.float32)
    steps, ref = {}, None
    for name, lib in libs.items():
        nn = lib.nn
        lib.manual_seed(0)
        net = nn.Sequential(nn.Linear(32, 64), nn.Tanh(), nn.Linear(64, 64), nn.Tanh(), nn.Linear(64, 10))
        if ref is None:
            ref = net
        else:
            copy_weights(ref, net, lib)
        params = {k: v.detach() for k, v in net.named_parameters()}
        a, b = to_lib(lib, x1), to_lib(lib, x2)

        def ntk(net=net, params=params, a=a, b=b, lib=lib):
            fc, vmap, jacrev = lib.func.functional_call, lib.func.vmap, lib.func.jacrev

            def single(p, x):
                return fc(net, p, (x.unsqueeze(0),)).squeeze(0)
            j1 = vmap(jacrev(single), (None, 0))(params, a)
            j2 = vmap(jacrev(single), (None, 0))(params, b)
            j1 = [j.flatten(2) for j in j1.values()]
            j2 = [j.flatten(2) for j in j2.values()]
            return lib.stack([lib.einsum("Naf,Mbf->NMab", u, v) for u, v in zip(j1, j2)]).sum(0)
        steps[name] = ntk
    return steps


# --------------------------------------------------------------------------- elementwise chain
def make_chain(libs, rng, n_ops=100, size=64):
    x0 = rng.standard_normal(size).astype(np.float32)
    w0 = rng.standard_normal(size).astype(np.float32)
    steps = {}
    for name, lib in libs.items():
        x = to_lib(lib, x0).requires_grad_()
        w = to_lib(lib, w0).requires_grad_()

        def forward(x, w):
            h = x
            for i in range(n_ops // 5):  # five ops a round
                h = (h * w + 0.5).tanh() - h * 0.1
                h = h.sigmoid() if i % 2 else h.relu()
            return h.sum()

        def step(x=x, w=w, forward=forward):
            x.grad = w.grad = None
            loss = forward(x, w)
            loss.backward()
            return loss
        steps[name] = step
    return steps


# --------------------------------------------------------------------------- TransformerEncoder
def make_transformer(libs, rng, d=128, seq=32, batch=8):
    xs = rng.standard_normal((batch, seq, d)).astype(np.float32)
    ys = rng.standard_normal((batch, seq, d)).astype(np.float32)
    steps, ref = {}, None
    for name, lib in libs.items():
        nn = lib.nn
        lib.manual_seed(0)
        layer = nn.TransformerEncoderLayer(d, 4, dim_feedforward=512, dropout=0.0, batch_first=True)
        model = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
        if ref is None:
            ref = model
        else:
            copy_weights(ref, model, lib)
        opt = lib.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
        x, y = to_lib(lib, xs), to_lib(lib, ys)
        mse = nn.MSELoss()

        def step(model=model, opt=opt, x=x, y=y, mse=mse):
            opt.zero_grad(set_to_none=True)
            loss = mse(model(x), y)
            loss.backward()
            opt.step()
            return loss
        steps[name] = step
    return steps


BUILDERS = {
    "char_gpt": lambda libs, rng: make_gpt(libs, rng, sdpa=False),
    "nanogpt_sdpa": lambda libs, rng: make_gpt(libs, rng, sdpa=True),
    "actor_critic": make_actor_critic,
    "bilstm_crf": make_bilstm_crf,
    "hessian": lambda libs, rng: make_jacobian(libs, rng, nested=False),
    "jacrev2": lambda libs, rng: make_jacobian(libs, rng, nested=True),
    "ntk": make_ntk,
    "chain100": make_chain,
    "transformer": make_transformer,
}


def build(workload, libs):
    """``{contender: step}`` for ``workload``, after checking that the first steps compute the same result."""
    steps = BUILDERS[workload](libs, np.random.default_rng(0))
    check_same(workload, {name: step() for name, step in steps.items()})
    return steps


def check_same(workload, results):
    """Raise unless ember's and PyTorch's results (``{contender: result}``) agree."""
    if len(results) == 2:
        e, t = value(results["ember"]), value(results["torch"])
        for a, b in zip(e if isinstance(e, list) else [e], t if isinstance(t, list) else [t]):
            if not np.allclose(a, b, rtol=1e-3, atol=1e-4):
                raise AssertionError(f"{workload}: ember and PyTorch compute different results "
                                     f"(max difference {np.max(np.abs(a - b)):.3g})")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=9)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--settle", type=float, default=0.3,
                    help="seconds of idle before each timed step (see bench_midsize)")
    ap.add_argument("--quick", action="store_true", help="3 timed steps after 1 warm-up")
    ap.add_argument("--only", help="comma-separated workloads (default: all)")
    ap.add_argument("--json")
    ap.add_argument("--modes", default=",".join(MODES), help="comma-separated modes (default: all)")
    ap.add_argument("--torch-compile", action="store_true", help="PyTorch's compiled column uses torch.compile")
    args = ap.parse_args(argv)
    TORCH_COMPILE[0] = args.torch_compile
    modes = {m: MODES[m] for m in args.modes.split(",")}
    if args.quick:
        args.repeat, args.warmup = 3, 1
    libs = {"ember": import_lib("ember")}
    try:
        libs["torch"] = import_lib("torch")
    except ImportError:
        print("torch not installed: ember alone")
    for lib in libs.values():
        lib.set_num_threads(args.threads)
    print(f"NumPy BLAS: {blas_info()}; threads {args.threads}, {args.repeat} timed steps, settle {args.settle} s")
    names = args.only.split(",") if args.only else WORKLOADS
    unknown = [n for n in names if n not in BUILDERS]
    if unknown:
        raise SystemExit(f"unknown workloads {unknown}; choose from {WORKLOADS}")
    report = {"threads": args.threads, "repeat": args.repeat, "workloads": {}}
    print(f"{'workload':<14}{'mode':<8}{'ember ms':>16}{'torch ms':>16}{'ratio':>8}{'best ratio':>12}")
    ratios = {mode: [] for mode in modes}
    for w in names:
        steps = build(w, libs)
        for mode, prepare in modes.items():
            prepared = {k: prepare(s, libs[k]) for k, s in steps.items()}
            if mode != "eager":
                first, results = {}, {}
                for k, s in prepared.items():
                    t0 = time.perf_counter()
                    results[k] = s()
                    first[k] = 1e3 * (time.perf_counter() - t0)
                check_same(f"{w} ({mode})", results)
                print(f"{w:<14}{mode:<8} first call " + ", ".join(f"{k} {v:.0f} ms" for k, v in first.items()))
            r = run_interleaved(w, libs, args.repeat, args.warmup, args.settle, steps=prepared)
            report["workloads"].setdefault(w, {})[mode] = r
            if mode != "eager":
                r["first_call_ms"] = first
            e = r["ember"]
            line = f"{w:<14}{mode:<8}{e['wall_ms'][0]:9.2f} ±{e['wall_ms'][1] / 2:5.2f}"
            if "torch" in r:
                t = r["torch"]
                r["ratio"], r["best_ratio"] = e["wall_ms"][0] / t["wall_ms"][0], e["best_ms"] / t["best_ms"]
                ratios[mode].append(r["ratio"])
                line += f"{t['wall_ms'][0]:9.2f} ±{t['wall_ms'][1] / 2:5.2f}{r['ratio']:7.2f}x{r['best_ratio']:11.2f}x"
            print(line, flush=True)
    for mode, rs in ratios.items():
        if rs:
            geo = math.exp(sum(map(math.log, rs)) / len(rs))
            report[f"geomean_{mode}"] = geo
            print(f"geometric mean ({mode}, {len(rs)} rows): {geo:.2f}x")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=1)


if __name__ == "__main__":
    main()

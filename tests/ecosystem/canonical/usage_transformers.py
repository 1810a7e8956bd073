"""transformers' canonical usage, run by the ecosystem harness under PyTorch and under ember: random tiny GPT-2,
Llama, BERT and ViT models (offline; the weights drawn by NumPy, so both frameworks start from the same numbers)
give their logits, loss and gradients, take AdamW steps and (the causal ones) generate greedily; a ``Trainer``
trains the tiny GPT-2 for a few steps. Under ember every number is compared with PyTorch's, computed by this same
file in a subprocess where ``torch`` is PyTorch again."""

import json
import os
import subprocess
import sys
import tempfile

import numpy as np
import pytest
import torch
import transformers

# PyTorch's numbers take a subprocess under ember (a minute or more on a busy machine), longer than the harness'
# per-test timeout allows for the first test's setup
pytestmark = pytest.mark.timeout(900)

KINDS = ("gpt2", "llama", "bert", "vit")
VOCAB = 50


def _under_ember() -> bool:
    compat = sys.modules.get("ember.torch_compat")
    return compat is not None and compat.installed()


def _config(kind):
    no_dropout = {"hidden_dropout_prob": 0.0, "attention_probs_dropout_prob": 0.0}
    if kind == "gpt2":
        return transformers.GPT2LMHeadModel, transformers.GPT2Config(
            vocab_size=VOCAB, n_positions=32, n_embd=16, n_layer=2, n_head=2, resid_pdrop=0.0, embd_pdrop=0.0,
            attn_pdrop=0.0, bos_token_id=0, eos_token_id=0)
    if kind == "llama":
        return transformers.LlamaForCausalLM, transformers.LlamaConfig(
            vocab_size=VOCAB, hidden_size=16, intermediate_size=32, num_hidden_layers=2, num_attention_heads=4,
            num_key_value_heads=2, max_position_embeddings=32, bos_token_id=0, eos_token_id=0, pad_token_id=0)
    if kind == "bert":
        return transformers.BertForMaskedLM, transformers.BertConfig(
            vocab_size=VOCAB, hidden_size=16, num_hidden_layers=2, num_attention_heads=2, intermediate_size=32,
            max_position_embeddings=32, **no_dropout)
    return transformers.ViTForImageClassification, transformers.ViTConfig(
        image_size=8, patch_size=4, num_channels=3, hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
        intermediate_size=32, num_labels=3, **no_dropout)


def _model(kind):
    """The tiny model with weights from NumPy's generator: norm scales near 1, everything else near 0."""
    cls, cfg = _config(kind)
    model = cls(cfg)
    rs = np.random.RandomState(0)
    with torch.no_grad():
        for _, p in model.named_parameters():
            values = rs.standard_normal(tuple(p.shape)).astype(np.float32) * 0.1
            p.copy_(torch.from_numpy(values + (1.0 if p.dim() == 1 and _is_scale(p, model) else 0.0)))
    return model


def _is_scale(p, model) -> bool:
    return any(p is m.weight for m in model.modules() if "Norm" in type(m).__name__)


def _inputs(kind):
    rs = np.random.RandomState(1)
    if kind == "vit":
        pixels = torch.from_numpy(rs.standard_normal((2, 3, 8, 8)).astype(np.float32))
        return {"pixel_values": pixels, "labels": torch.tensor([0, 2])}
    ids = torch.from_numpy(rs.randint(1, VOCAB, size=(2, 10)).astype(np.int64))
    mask = torch.ones(2, 10, dtype=torch.int64)
    return {"input_ids": ids, "attention_mask": mask, "labels": ids}


def _arrays(tensors) -> list:
    return [t.detach().float().numpy().ravel().tolist() for t in tensors]


def model_numbers(kind) -> dict:
    """Logits, loss and every gradient; the losses and parameters after three AdamW steps; greedy generation."""
    model = _model(kind)
    inputs = _inputs(kind)
    out = model(**inputs)
    out.loss.backward()
    names = [n for n, _ in model.named_parameters()]
    res = {"names": names, "logits": _arrays([out.logits]), "loss": out.loss.item(),
           "grads": _arrays([p.grad for p in model.parameters()])}
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2, weight_decay=0.01)
    losses = []
    for _ in range(3):
        opt.step()
        opt.zero_grad()
        loss = model(**inputs).loss
        loss.backward()
        losses.append(loss.item())
    res["losses"], res["params"] = losses, _arrays(model.parameters())
    if kind in ("gpt2", "llama"):
        model.eval()
        gen = model.generate(inputs["input_ids"][:1, :4], attention_mask=inputs["attention_mask"][:1, :4],
                             max_new_tokens=6, do_sample=False, pad_token_id=0)
        res["generate"] = gen.tolist()
    return res


class _Tokens(torch.utils.data.Dataset):
    def __len__(self):
        return 4  # one batch per step: the sampler's order changes only the order of a sum

    def __getitem__(self, i):
        ids = torch.arange(i, i + 8).remainder(VOCAB)
        return {"input_ids": ids, "labels": ids}


def trainer_numbers(output_dir: str) -> dict:
    """The losses a ``Trainer`` logs over six steps of the tiny GPT-2, and its step count."""
    args = transformers.TrainingArguments(output_dir=output_dir, max_steps=6, per_device_train_batch_size=4,
                                          learning_rate=1e-2, report_to=[], use_cpu=True, save_strategy="no",
                                          logging_steps=1, seed=0)
    trainer = transformers.Trainer(model=_model("gpt2"), args=args, train_dataset=_Tokens())
    trainer.train()
    losses = [h["loss"] for h in trainer.state.log_history if "loss" in h]
    return {"losses": losses, "global_step": trainer.state.global_step}


_REFERENCE = """
import json, sys, tempfile
compat = sys.modules.get("ember.torch_compat")  # the harness' sitecustomize put ember in place: take it away
if compat is not None:
    compat.uninstall()
sys.path.insert(0, {here!r})
import usage_transformers as u
out = {{kind: u.model_numbers(kind) for kind in u.KINDS}}
out["trainer"] = u.trainer_numbers(tempfile.mkdtemp())
print("REFERENCE " + json.dumps(out))
"""


@pytest.fixture(scope="module")
def pytorch_numbers():
    """PyTorch's numbers: computed here when ``torch`` is PyTorch, else in a subprocess where it is again."""
    if not _under_ember():
        out = {kind: model_numbers(kind) for kind in KINDS}
        out["trainer"] = trainer_numbers(tempfile.mkdtemp())
        return out
    script = _REFERENCE.format(here=os.path.dirname(os.path.abspath(__file__)))
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=600)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("REFERENCE ")]
    assert proc.returncode == 0 and lines, proc.stderr[-3000:]
    return json.loads(lines[-1][len("REFERENCE "):])


def _close(name, ours, theirs, rtol, atol):
    np.testing.assert_allclose(np.asarray(ours, dtype=np.float64), np.asarray(theirs, dtype=np.float64), rtol=rtol,
                               atol=atol, err_msg=name)


@pytest.mark.parametrize("kind", KINDS)
def test_model_matches_pytorch(kind, pytorch_numbers):
    ours, ref = model_numbers(kind), pytorch_numbers[kind]
    assert ours["names"] == ref["names"]
    _close("logits", ours["logits"], ref["logits"], 1e-4, 1e-5)
    _close("loss", ours["loss"], ref["loss"], 1e-5, 1e-6)
    for name, g, h in zip(ours["names"], ours["grads"], ref["grads"]):
        _close(f"grad of {name}", g, h, 1e-3, 1e-5)
    _close("losses after AdamW steps", ours["losses"], ref["losses"], 1e-4, 1e-5)
    for name, p, q, g in zip(ours["names"], ours["params"], ref["params"], ref["grads"]):
        # a key projection's bias has a zero gradient (softmax ignores a shift of all scores): its rounding noise,
        # different in every framework, is what AdamW normalises into steps there, so those entries are left out
        signal = np.abs(np.asarray(g)) > 1e-6
        _close(f"{name} after AdamW steps", np.asarray(p)[signal], np.asarray(q)[signal], 1e-4, 1e-5)
    assert ours.get("generate") == ref.get("generate")
    assert ours["losses"][-1] < ours["loss"]


def test_trainer_matches_pytorch(pytorch_numbers, tmp_path):
    ours, ref = trainer_numbers(str(tmp_path)), pytorch_numbers["trainer"]
    assert ours["global_step"] == ref["global_step"] == 6
    _close("Trainer losses", ours["losses"], ref["losses"], 1e-4, 1e-4)
    assert ours["losses"][-1] < ours["losses"][0]

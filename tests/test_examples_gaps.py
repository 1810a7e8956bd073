"""Behaviour that PyTorch's own example programs (``pytorch/examples``) rely on, each swept against PyTorch.

The programs themselves run in ``tests/test_pytorch_examples.py`` when a checkout is given; the classes of
behaviour they exposed are checked here without one.
"""
import itertools
import pickle
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")


def _outcome(fn, *args, **kwargs):
    """What a call did, and its result: ``("ok", warning classes), result`` or ``("raise", class name), None``."""
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        try:
            result = fn(*args, **kwargs)
        except Exception as e:  # noqa: BLE001 - the class is the outcome compared
            return ("raise", type(e).__name__), None
    return ("ok", sorted({w.category.__name__ for w in seen})), result


_ENVS = {"none": {}, "force": {"TORCH_FORCE_WEIGHTS_ONLY_LOAD": "1"},
         "no_force": {"TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD": "true"},
         "both": {"TORCH_FORCE_WEIGHTS_ONLY_LOAD": "yes", "TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD": "1"}}


@pytest.mark.parametrize("env", _ENVS)
def test_load_weights_only_default_and_environment(device, tmp_path, monkeypatch, env):
    """``weights_only`` unset is True unless a pickle_module is given, and PyTorch's two environment variables
    override it (time_sequence_prediction's ``torch.load`` of a pickled NumPy array needs the second)."""
    for var in ("TORCH_FORCE_WEIGHTS_ONLY_LOAD", "TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD"):
        monkeypatch.delenv(var, raising=False)
    for var, value in _ENVS[env].items():
        monkeypatch.setenv(var, value)
    array = np.arange(6.0).reshape(2, 3)
    ember.save({"t": ember.ones(2, device=device), "a": array}, tmp_path / "e.pt")
    torch.save({"t": torch.ones(2), "a": array}, tmp_path / "t.pt")
    kwargs_cases = [dict(zip(("weights_only", "pickle_module"), combo))
                    for combo in itertools.product((None, True, False), (None, pickle))]
    for kwargs in kwargs_cases:
        kwargs = {k: v for k, v in kwargs.items() if v is not None}
        got, loaded = _outcome(ember.load, tmp_path / "e.pt", **kwargs)
        want, _ = _outcome(torch.load, tmp_path / "t.pt", **kwargs)
        assert got == want, (env, kwargs)
        if got[0] == "ok":
            assert np.array_equal(loaded["a"], array) and loaded["t"].device.type == device


SPAWNED_CHILD = textwrap.dedent("""
    import torch
    import torch.multiprocessing as mp

    def work(t):
        t.add_(1)
        print("child", repr(torch), flush=True)

    class Items(torch.utils.data.Dataset):
        def __len__(self):
            return 4

        def __getitem__(self, i):
            return torch.full((2,), float(i))

    if __name__ == "__main__":
        mp.set_start_method("spawn", force=True)
        t = torch.zeros(3)
        t.share_memory_()
        p = mp.Process(target=work, args=(t,))
        p.start()
        p.join()
        print("parent", p.exitcode, t.tolist())
        batches = torch.utils.data.DataLoader(Items(), batch_size=2, num_workers=1, multiprocessing_context="spawn")
        print("workers", [b.sum().item() for b in batches])
""")


def test_spawned_child_imports_torch_as_ember(tmp_path):
    """Under ``python -m ember run`` a child of multiprocessing's spawn method gets the alias too (mnist_hogwild
    trains in such children: they had imported PyTorch, or failed where it is absent), and its in-place update of
    a shared-memory tensor reaches the parent; DataLoader workers started by spawn return ember tensors (they
    had returned PyTorch's, which the collate refused)."""
    (tmp_path / "prog.py").write_text(SPAWNED_CHILD)
    proc = subprocess.run([sys.executable, "-m", "ember", "run", "prog.py"], cwd=tmp_path, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "child <module 'torch' (ember's ember)>" in proc.stdout
    assert "parent 0 [1.0, 1.0, 1.0]" in proc.stdout
    assert "workers [2.0, 10.0]" in proc.stdout



def _cross_entropy(lib, logits, target, dtype, device=None, **kwargs):
    where = {"device": device} if device else {}
    x = lib.tensor(logits, dtype=getattr(lib, dtype), **where)
    loss = lib.nn.functional.cross_entropy(x, lib.tensor(target, **where), **kwargs)
    assert loss.dtype == x.dtype
    return loss.item()


@pytest.mark.parametrize("dtype", ["float32", "float64", "bfloat16"])
def test_zero_cross_entropy_is_positive_zero(device, dtype):
    """A cross entropy of class indices that is exactly zero is +0.0, in the input's dtype, as PyTorch's sum
    from zero gives: imagenet/main.py printed ``Loss -0.0000e+00`` for a confidently right batch."""
    if device == "array_api" and dtype == "bfloat16":
        pytest.skip("the strict array API has no bfloat16")
    logits, target = [[1000.0, 0.0], [0.0, 1000.0], [1000.0, 0.0]], [0, 1, 2]
    for reduction in ("mean", "sum"):
        for ignore_index, rows in ((-100, 2), (2, 3)):  # the third row's target is ignored
            kwargs = {"reduction": reduction, "ignore_index": ignore_index}
            got = _cross_entropy(ember, logits[:rows], target[:rows], dtype, device, **kwargs)
            want = _cross_entropy(torch, logits[:rows], target[:rows], dtype, **kwargs)
            assert got == want == 0 and np.signbit(got) == np.signbit(want), kwargs

"""Gaps transformers 5.24's own tiny-model tests (GPT-2, Llama, BERT, ViT, see docs/ecosystem.md) showed under the
alias, each checked against PyTorch."""
import pytest

import ember


@pytest.mark.parametrize("old, new", [("reset_max_memory_allocated", "reset_peak_memory_stats"),
                                      ("reset_max_memory_cached", "reset_peak_memory_stats"),
                                      ("memory_cached", "memory_reserved"),
                                      ("max_memory_cached", "max_memory_reserved")])
def test_cuda_deprecated_memory_names(old, new, monkeypatch):
    """transformers' testing_utils reads ``torch.cuda.reset_max_memory_allocated`` at import: PyTorch's deprecated
    names warn as PyTorch's do and call the current name with the same device."""
    torch = pytest.importorskip("torch")
    with pytest.warns(FutureWarning) as theirs:
        try:
            getattr(torch.cuda, old)()
        except (AttributeError, RuntimeError, AssertionError):  # a CPU build of PyTorch has no CUDA counters
            pass
    calls = []
    monkeypatch.setattr(ember.cuda._api, new, lambda device=None: calls.append(device) or 7)
    with pytest.warns(FutureWarning) as ours:
        assert getattr(ember.cuda, old)("cuda:0") == 7
    assert calls == ["cuda:0"]
    assert str(ours[0].message) == str(theirs[0].message)
    assert ours[0].filename == __file__  # the warning points at the caller, as PyTorch's does


def test_storage_slices_as_safetensors_reads_them(tmp_path):
    """safetensors' memory-mapped loading (``safe_open(..., backend="mmap")``, what ``from_pretrained`` uses) takes
    ``UntypedStorage.from_file(...).untyped()``, slices it by byte range and views the bytes as the tensor's dtype."""
    torch = pytest.importorskip("torch")
    import numpy as np

    path = tmp_path / "w.bin"
    values = np.arange(6, dtype=np.float32)
    path.write_bytes(b"\x07" * 8 + values.tobytes())
    out = {}
    for lib in (torch, ember):
        storage = lib.UntypedStorage.from_file(str(path), shared=False, nbytes=path.stat().st_size)
        assert storage.untyped() is storage
        part = storage[8:32]
        assert isinstance(part, lib.UntypedStorage) and part.nbytes() == 24
        t = lib.asarray(part, dtype=lib.uint8).view(dtype=lib.float32).reshape([2, 3])
        out[lib.__name__] = (storage[0], t.tolist(), lib.tensor([1.5, 2.0]).untyped_storage()[4:8].tolist())
        with pytest.raises(RuntimeError):
            storage[0:8:2]
    assert out["ember"] == out["torch"]
    assert out["ember"][1] == values.reshape(2, 3).tolist()


def test_extra_state_key_suffix():
    """transformers' loader compares each key's last part with ``nn.modules.module._EXTRA_STATE_KEY_SUFFIX``; it is the
    key a module's ``get_extra_state()`` is saved under."""
    torch = pytest.importorskip("torch")
    from ember.nn.modules import module

    assert module._EXTRA_STATE_KEY_SUFFIX == torch.nn.modules.module._EXTRA_STATE_KEY_SUFFIX

    def with_state(lib):
        class WithState(lib.nn.Linear):
            def get_extra_state(self):
                return {"step": 3}

            def set_extra_state(self, state):
                self.step = state["step"]
        return WithState(2, 2)

    assert list(with_state(ember).state_dict()) == list(with_state(torch).state_dict())
    restored = with_state(ember)
    restored.load_state_dict({**with_state(ember).state_dict(), "_extra_state": {"step": 5}})
    assert restored.step == 5


def test_gelu_keeps_float16():
    """A float16 model's MLP (transformers' eager-vs-SDPA tests in half precision): gelu of float16 is float16, as in
    PyTorch (SciPy's erf of float16 is float64, which the next Linear refused)."""
    torch = pytest.importorskip("torch")
    import numpy as np

    x = np.linspace(-4, 4, 33).astype(np.float16)
    for approximate in ("none", "tanh"):
        ours = ember.nn.functional.gelu(ember.tensor(x), approximate=approximate)
        theirs = torch.nn.functional.gelu(torch.tensor(x), approximate=approximate)
        assert ours.dtype == ember.float16
        np.testing.assert_allclose(ours.numpy().astype(np.float32), theirs.numpy().astype(np.float32), atol=2e-3)

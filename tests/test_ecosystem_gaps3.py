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

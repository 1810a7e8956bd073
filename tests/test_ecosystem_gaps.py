"""Gaps the ecosystem libraries' own test suites showed (see docs/ecosystem.md), each checked against PyTorch."""
import pytest


@pytest.mark.parametrize("name", ["zeros", "ones", "empty", "rand", "randn"])
def test_factory_takes_size_keyword(device, name):
    """einops' tests call ``torch.randn(size=(...))``: PyTorch's factories take the shape as ``size=``."""
    torch = pytest.importorskip("torch")
    import ember

    for shape in [(2, 3), [4], ()]:
        got = getattr(ember, name)(size=shape, device=device)
        assert tuple(got.shape) == tuple(getattr(torch, name)(size=shape).shape)
        assert got.dtype == ember.float32
    if name in ("zeros", "ones"):
        assert getattr(ember, name)(size=(2,), device=device).tolist() == getattr(torch, name)(size=(2,)).tolist()
    with pytest.raises(TypeError, match=name):
        getattr(torch, name)(2, size=(2,))
    with pytest.raises(TypeError, match=name):
        getattr(ember, name)(2, size=(2,), device=device)

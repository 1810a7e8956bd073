"""The examples in PyTorch's own ``torch.distributions`` docstrings run on ember unmodified (``torch`` bound to
ember; ``from torch.distributions.x import y`` read as ``ember.distributions.x``), on every backend."""
import inspect
import warnings

import pytest

import ember
import ember.distributions as D


def _examples():
    td = pytest.importorskip("torch.distributions")
    found = []
    for name in sorted(set(td.__all__)):
        lines = [ln.strip()[4:] for ln in (inspect.getdoc(getattr(td, name)) or "").splitlines()
                 if ln.strip().startswith((">>>", "..."))]
        if lines and not any("+SKIP" in ln for ln in lines):  # PyTorch skips these itself
            found.append((name, "\n".join(lines).replace("from torch.", "from ember.")))
    return found


try:
    EXAMPLES = _examples()
except pytest.skip.Exception:
    EXAMPLES = []


@pytest.mark.skipif(not EXAMPLES, reason="needs torch for its docstrings")
@pytest.mark.parametrize("name,src", EXAMPLES, ids=[n for n, _ in EXAMPLES])
def test_torch_docstring_example_runs(device, name, src):
    previous = ember.get_default_device() if hasattr(ember, "get_default_device") else None
    ns = {"torch": ember, **{n: getattr(D, n) for n in D.__all__}}
    ember.set_default_device(device)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # PyTorch's Wishart example warns on valid draws
            exec(compile(src, f"<torch.distributions.{name} docstring>", "exec"), ns)  # noqa: S102
    finally:
        ember.set_default_device(previous if previous is not None else "cpu")
    assert any(isinstance(v, D.Distribution) for v in ns.values())

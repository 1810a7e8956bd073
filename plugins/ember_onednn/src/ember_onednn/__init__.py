"""ember-onednn: CPU kernels on oneDNN (Intel's deep-learning primitives, the library behind PyTorch's CPU
convolutions) for ember's ``cpu`` backend.

Installed, it serves float32 convolutions, forward and both gradients, with oneDNN's JIT kernels for the
machine's vector ISA (AVX-512 where the CPU has it); everything else, and any geometry below the size where
it pays, stays on the kernels it replaced.  It also serves float32 matrix products large enough to pay
(nn.Linear's with the bias added in the GEMM), training-mode batch norm, layer norm, LSTM layers, the
gradients of max pooling, relu and softmax, gelu and its gradient, and the SGD update.
``EMBER_ONEDNN=0`` leaves every kernel as it was.
"""
from __future__ import annotations

import os

import pluggy

# ember's hook marker, made here rather than imported: a program that imports this package before ember must
# not start ember's import (and its plugin loading) while this module is still half-initialised
hookimpl = pluggy.HookimplMarker("ember")

__version__ = "0.1.0"

PRIORITY = 1


def _replaced(op):
    """The kernel this plugin's ``op`` replaced on the CPU backend (looked up once)."""
    fn = _BELOW.get(op)
    if fn is None:
        import ember.plugins
        ours = KERNELS.get(op)
        fn = next((f for f, _, _ in reversed(ember.plugins.REGISTRY.replaced.get(("cpu", op), [])) if f is not ours),
                  None)
        if fn is None:
            raise RuntimeError(f"ember-onednn: no kernel below its {op!r} on the cpu backend")
        _BELOW[op] = fn
    return fn


_BELOW: dict = {}

KERNELS: dict = {}


@hookimpl
def ember_kernels(registry):
    if os.environ.get("EMBER_ONEDNN", "1") == "0":
        return
    from . import binary, conv, eltwise, layer_norm, lstm, matmul, norm, pool, softmax
    for module in (binary, conv, eltwise, layer_norm, lstm, matmul, norm, pool, softmax):
        KERNELS.update(module.kernels(_replaced))
    for op, fn in KERNELS.items():
        registry.add_kernel("cpu", op, fn, priority=PRIORITY)

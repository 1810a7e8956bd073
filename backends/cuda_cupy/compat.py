"""Shared kernels that use NumPy API CuPy lacks, rewritten with CuPy's."""
from __future__ import annotations


# kernels that raise on a singular or not positive-definite input, as PyTorch's do on CUDA too (a device sync)
RAISING_LINALG = ("inv", "solve", "cholesky")


def raising_linalg(cp, shared) -> dict:
    """The shared kernels of :data:`RAISING_LINALG` run under ``cupyx.errstate(linalg="raise")``: CuPy
    otherwise returns NaN/inf for a singular matrix where NumPy raises ``LinAlgError`` (which dispatch
    reports as PyTorch's ``torch.linalg.LinAlgError``)."""
    try:
        from cupyx import errstate
    except ImportError:
        return {}

    def raising(fn):
        def kernel(*args, **kwargs):
            with errstate(linalg="raise"):
                return fn(*args, **kwargs)

        kernel.__name__ = getattr(fn, "__name__", "kernel")
        return kernel

    return {name: raising(shared[name]) for name in RAISING_LINALG if name in shared}


def kernels(cp, shared) -> dict:
    """Overrides for CuPy module ``cp`` of the shared kernel table ``shared``."""

    def view(x, shape):
        # NumPy's reshape(copy=False) refuses to copy; CuPy's reshape has no such flag, so check the result
        y = x.reshape(shape)
        if y.size and y.data.ptr != x.data.ptr:
            raise ValueError(f"view size is not compatible with input tensor's size and stride (shape "
                             f"{list(x.shape)}, strides {list(x.strides)}, requested {list(shape)})")
        return y

    table = {"view": view}
    table.update(raising_linalg(cp, shared))
    try:  # CuPy's own error functions, rather than the shared array-API series
        from cupyx.scipy import special
    except ImportError:
        return table
    table.update({name: getattr(special, name) for name in ("erf", "erfc", "erfinv") if hasattr(special, name)})
    return table

"""Shared kernels that use NumPy API CuPy lacks, rewritten with CuPy's."""
from __future__ import annotations


def kernels(cp) -> dict:
    """Overrides for CuPy module ``cp``."""

    def view(x, shape):
        # NumPy's reshape(copy=False) refuses to copy; CuPy's reshape has no such flag, so check the result
        y = x.reshape(shape)
        if y.size and y.data.ptr != x.data.ptr:
            raise ValueError(f"view size is not compatible with input tensor's size and stride (shape "
                             f"{list(x.shape)}, strides {list(x.strides)}, requested {list(shape)})")
        return y

    table = {"view": view}
    try:  # CuPy's own error functions, rather than the shared array-API series
        from cupyx.scipy import special
    except ImportError:
        return table
    table.update({name: getattr(special, name) for name in ("erf", "erfc", "erfinv") if hasattr(special, name)})
    return table

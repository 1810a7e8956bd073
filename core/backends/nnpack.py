"""``ember.backends.nnpack``: ember's CPU kernels are NumPy's, and do not use nnpack directly."""


def is_available() -> bool:
    """False: ember does not use nnpack (NumPy's own BLAS and loops do the CPU work)."""
    return False

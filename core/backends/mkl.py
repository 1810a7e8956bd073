"""``ember.backends.mkl``: ember's CPU kernels are NumPy's, and do not use mkl directly."""


def is_available() -> bool:
    """False: ember does not use mkl (NumPy's own BLAS and loops do the CPU work)."""
    return False

"""``ember.backends.openmp``: ember's CPU kernels are NumPy's, and do not use openmp directly."""


def is_available() -> bool:
    """False: ember does not use openmp (NumPy's own BLAS and loops do the CPU work)."""
    return False

"""``ember.backends.mkldnn``: ember's CPU kernels are NumPy's, and do not use mkldnn directly."""


def is_available() -> bool:
    """False: ember does not use mkldnn (NumPy's own BLAS and loops do the CPU work)."""
    return False

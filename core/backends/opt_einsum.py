"""``ember.backends.opt_einsum``: whether einsum contraction order is optimised (NumPy's ``optimize=True``)."""

enabled = True
strategy = "auto"


def is_available() -> bool:
    """True: ``ember.einsum`` lets NumPy choose the contraction order."""
    return True


def get_opt_einsum():
    return None

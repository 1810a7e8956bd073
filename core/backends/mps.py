"""``ember.backends.mps``: ember has no Metal backend."""


def is_available() -> bool:
    """False: ember has no Metal (Apple GPU) backend."""
    return False


def is_built() -> bool:
    """False: ember has no Metal (Apple GPU) backend."""
    return False


def is_macos_or_newer(major: int, minor: int) -> bool:
    return False

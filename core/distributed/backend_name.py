"""``ember.distributed.Backend``: the names of communication backends, as PyTorch spells them."""
from __future__ import annotations


class Backend(str):
    """A backend's name: ``Backend("MPI")`` is the string ``"mpi"`` (the known names as class attributes;
    an unknown name comes back lower-cased, as in PyTorch, and is checked when a process group starts).

    >>> import ember.distributed as dist
    >>> dist.Backend("MPI"), dist.Backend.NCCL
    ('mpi', 'nccl')
    """

    UNDEFINED = "undefined"
    GLOO = "gloo"
    NCCL = "nccl"
    XCCL = "xccl"
    UCC = "ucc"
    MPI = "mpi"
    FAKE = "fake"
    backend_list = [UNDEFINED, GLOO, NCCL, XCCL, UCC, MPI, FAKE]
    default_device_backend_map = {"cpu": MPI, "cuda": NCCL}

    def __new__(cls, name: str):
        if not isinstance(name, str):
            raise ValueError(f"Backend constructor parameter must be string-ish, got {type(name).__name__}")
        value = getattr(Backend, name.upper(), Backend.UNDEFINED)
        return value if value != Backend.UNDEFINED else name.lower()

    @classmethod
    def register_backend(cls, name, func, extended_api=False, devices=None) -> None:
        """Third-party process-group backends plug into ember through its MPI engine, not this registry."""
        raise NotImplementedError(f"ember.distributed.Backend.register_backend: ember's collectives run on MPI "
                                  f"(and NCCL through CuPy); a backend {name!r} cannot be registered")

"""The device mesh: this job's processes arranged in a grid, each mesh dimension a group that collectives run over.

ember has no process sub-groups, so a mesh holds every rank of the job and at most one of its dimensions has more
than one rank: that dimension's group is the whole job, the others hold this rank alone (their collectives are the
identity). A world of one process takes any mesh of ones.
"""
from __future__ import annotations

import math

from ... import dtypes
from ...ops.creation import arange, as_tensor
from ...tensor import Tensor
from .. import collectives as _c


def _world() -> int:
    """The job's size, starting the default process group (on MPI) first where none is, as PyTorch's mesh does."""
    if not _c.is_initialized():
        _c.init_process_group()
    return _c.get_world_size()


class DeviceMesh:
    """This job's ranks laid out as ``mesh`` (an integer tensor or nested list of ranks) for ``device_type``.

    >>> from ember.distributed.tensor import DeviceMesh
    >>> mesh = DeviceMesh("cpu", [0])     # on one process  # doctest: +SKIP
    >>> mesh.ndim, mesh.shape, mesh.get_rank(), mesh.get_coordinate()  # doctest: +SKIP
    (1, (1,), 0, (0,))
    """

    def __init__(self, device_type: str, mesh, *, mesh_dim_names=None, _init_backend: bool = True, **kwargs):
        ranks = mesh if isinstance(mesh, Tensor) else as_tensor(mesh, dtype=dtypes.int64)
        world = _world()
        if ranks.ndim == 0 or sorted(ranks.reshape(-1).tolist()) != list(range(world)):
            raise NotImplementedError(f"DeviceMesh: ember's mesh holds every rank of the job once (ranks 0..{world - 1}"
                                      f"), got {ranks.tolist()}: ember has no process sub-groups yet")
        if sum(n > 1 for n in ranks.shape) > 1:
            raise NotImplementedError(f"DeviceMesh: a mesh of shape {tuple(ranks.shape)} needs one process group per "
                                      f"row of each dimension, and ember has no process sub-groups yet (one "
                                      f"dimension may have more than one rank)")
        if mesh_dim_names is not None and len(mesh_dim_names) != ranks.ndim:
            raise RuntimeError(f"mesh_dim_names {tuple(mesh_dim_names)} must have one name per mesh dimension "
                               f"({ranks.ndim})")
        self.device_type = device_type
        self.mesh = ranks.to(dtypes.int32)  # (PyTorch's mesh tensor is int32)
        self.mesh_dim_names = tuple(mesh_dim_names) if mesh_dim_names is not None else None
        self._coordinate = [int(c) for c in (ranks == _c.get_rank()).nonzero()[0].tolist()]

    @property
    def ndim(self) -> int:
        return self.mesh.ndim

    @property
    def shape(self) -> tuple:
        return tuple(self.mesh.shape)

    def size(self, mesh_dim: int | None = None) -> int:
        """The number of ranks in the mesh, or along ``mesh_dim``."""
        return self.mesh.numel() if mesh_dim is None else self.mesh.shape[mesh_dim]

    def get_rank(self) -> int:
        """This process's rank in the job."""
        return _c.get_rank()

    def get_coordinate(self) -> tuple:
        """This rank's index along each mesh dimension."""
        return tuple(self._coordinate)

    def _dim(self, mesh_dim) -> int:
        if mesh_dim is None:
            if self.ndim != 1:
                raise RuntimeError(f"Found the DeviceMesh have {self.ndim} dimensions: name a mesh_dim")
            return 0
        if isinstance(mesh_dim, str):
            if self.mesh_dim_names is None or mesh_dim not in self.mesh_dim_names:
                raise KeyError(f"Mesh dimension '{mesh_dim}' does not exist. Available mesh dimensions are: "
                               f"mesh_dim_names={self.mesh_dim_names}")
            return self.mesh_dim_names.index(mesh_dim)
        return mesh_dim

    def get_local_rank(self, mesh_dim=None) -> int:
        """This rank's index along ``mesh_dim`` (a number or a name; the only one of a 1-D mesh by default)."""
        return self._coordinate[self._dim(mesh_dim)]

    def get_group(self, mesh_dim=None):
        """The process group of ``mesh_dim``: the whole job's (ember's one group)."""
        self._dim(mesh_dim)
        return _c.group.WORLD

    def __getitem__(self, names) -> DeviceMesh:
        """The mesh of the named dimensions (one name or a tuple of names) through this rank."""
        names = (names,) if isinstance(names, str) else tuple(names)
        dims = [self._dim(n) for n in names]
        if dims != sorted(set(dims)):
            raise KeyError(f"Invalid mesh_dim_names {names} specified: the names must be in the mesh's order "
                           f"{self.mesh_dim_names}, each once")
        index = tuple(slice(None) if d in dims else self._coordinate[d] for d in range(self.ndim))
        return DeviceMesh(self.device_type, self.mesh[index], mesh_dim_names=names)

    def __eq__(self, other) -> bool:
        return isinstance(other, DeviceMesh) and (self.device_type, self.shape, self.mesh.tolist(),
                                                  self.mesh_dim_names) == (other.device_type, other.shape,
                                                                           other.mesh.tolist(), other.mesh_dim_names)

    def __hash__(self) -> int:
        return hash((self.device_type, self.shape, self.mesh_dim_names))

    def __repr__(self) -> str:
        dims = (", ".join(f"{n}={s}" for n, s in zip(self.mesh_dim_names, self.shape)) if self.mesh_dim_names
                else ", ".join(map(str, self.shape)) + ("," if self.ndim == 1 else ""))
        return f"DeviceMesh(({dims}), '{self.device_type}')"


def init_device_mesh(device_type: str, mesh_shape, *, mesh_dim_names=None) -> DeviceMesh:
    """A :class:`DeviceMesh` of ``mesh_shape`` over the job's ranks in order (the default process group is
    started where none is).

    >>> from ember.distributed.tensor import init_device_mesh
    >>> init_device_mesh("cpu", (1,)).shape   # on one process  # doctest: +SKIP
    (1,)
    """
    mesh_shape = tuple(mesh_shape)
    world = _world()
    if math.prod(mesh_shape) != world:
        raise RuntimeError(f"init_device_mesh: mesh shape {mesh_shape} holds {math.prod(mesh_shape)} ranks, the job "
                           f"has {world}")
    return DeviceMesh(device_type, arange(world).reshape(mesh_shape), mesh_dim_names=mesh_dim_names)

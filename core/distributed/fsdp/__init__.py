"""``ember.distributed.fsdp`` (``torch.distributed.fsdp``): PyTorch's fully-sharded data-parallel API, importable.

The settings are complete descriptions as in PyTorch (:class:`ShardingStrategy`, :class:`MixedPrecision`,
:class:`MixedPrecisionPolicy`, the state-dict configurations, ...), so libraries that import them or build them
into their own configuration work. Sharding itself is not built yet: wrapping a module in
:class:`FullyShardedDataParallel` or calling :func:`fully_shard` raises NotImplementedError, and
``isinstance(m, FSDPModule)`` is False for every module, which is the truth.

>>> from ember.distributed.fsdp import MixedPrecisionPolicy, ShardingStrategy
>>> ShardingStrategy.FULL_SHARD.value, MixedPrecisionPolicy().cast_forward_inputs
(1, True)
"""
from __future__ import annotations

import dataclasses
import enum
from typing import Any

from ...nn.modules.batchnorm import _BatchNorm
from ...nn.modules.module import Module

__all__ = ["BackwardPrefetch", "CPUOffload", "FullOptimStateDictConfig", "FullStateDictConfig",
           "FullyShardedDataParallel", "LocalOptimStateDictConfig", "LocalStateDictConfig", "MixedPrecision",
           "OptimStateDictConfig", "OptimStateKeyType", "ShardedOptimStateDictConfig", "ShardedStateDictConfig",
           "ShardingStrategy", "StateDictConfig", "StateDictSettings", "StateDictType", "CPUOffloadPolicy",
           "DataParallelMeshDims", "FSDPModule", "fully_shard", "MixedPrecisionPolicy", "OffloadPolicy",
           "register_fsdp_forward_method"]


def _missing(what: str):
    return NotImplementedError(f"ember has no working {what} yet: ember.distributed.fsdp provides PyTorch's "
                               f"settings and types for imports and isinstance checks only")


class ShardingStrategy(enum.Enum):
    """What FSDP shards: parameters, gradients and optimizer state (``FULL_SHARD``), or less."""

    FULL_SHARD = 1
    SHARD_GRAD_OP = 2
    NO_SHARD = 3
    HYBRID_SHARD = 4
    _HYBRID_SHARD_ZERO2 = 5


class BackwardPrefetch(enum.Enum):
    """When FSDP gathers the next parameters during backward."""

    BACKWARD_PRE = 1
    BACKWARD_POST = 2


class StateDictType(enum.Enum):
    """Which state dict an FSDP module gives: the whole model, its local shards, or sharded tensors."""

    FULL_STATE_DICT = 1
    LOCAL_STATE_DICT = 2
    SHARDED_STATE_DICT = 3


class OptimStateKeyType(enum.Enum):
    """How an optimizer state dict names its parameters."""

    PARAM_NAME = 1
    PARAM_ID = 2


@dataclasses.dataclass
class MixedPrecision:
    """FSDP's mixed precision: the dtypes of parameters, gradient reduction and buffers."""

    param_dtype: Any = None
    reduce_dtype: Any = None
    buffer_dtype: Any = None
    keep_low_precision_grads: bool = False
    cast_forward_inputs: bool = False
    cast_root_forward_inputs: bool = True
    _module_classes_to_ignore: tuple = (_BatchNorm,)


@dataclasses.dataclass
class CPUOffload:
    """Whether FSDP keeps parameters (and their gradients) on the CPU between uses."""

    offload_params: bool = False


@dataclasses.dataclass
class StateDictConfig:
    """The settings of an FSDP state dict."""

    offload_to_cpu: bool = False


@dataclasses.dataclass
class FullStateDictConfig(StateDictConfig):
    rank0_only: bool = False


@dataclasses.dataclass
class LocalStateDictConfig(StateDictConfig):
    pass


@dataclasses.dataclass
class ShardedStateDictConfig(StateDictConfig):
    _use_dtensor: bool = False


@dataclasses.dataclass
class OptimStateDictConfig:
    """The settings of an FSDP optimizer state dict."""

    offload_to_cpu: bool = True


@dataclasses.dataclass
class FullOptimStateDictConfig(OptimStateDictConfig):
    rank0_only: bool = False


@dataclasses.dataclass
class LocalOptimStateDictConfig(OptimStateDictConfig):
    offload_to_cpu: bool = False


@dataclasses.dataclass
class ShardedOptimStateDictConfig(OptimStateDictConfig):
    _use_dtensor: bool = False


@dataclasses.dataclass
class StateDictSettings:
    """A module's state-dict type with its two configurations."""

    state_dict_type: StateDictType
    state_dict_config: StateDictConfig
    optim_state_dict_config: OptimStateDictConfig


@dataclasses.dataclass(frozen=True)
class MixedPrecisionPolicy:
    """``fully_shard``'s mixed precision: the dtypes of parameters, gradient reduction and outputs."""

    param_dtype: Any = None
    reduce_dtype: Any = None
    output_dtype: Any = None
    cast_forward_inputs: bool = True


@dataclasses.dataclass
class OffloadPolicy:
    """``fully_shard``'s offloading: none (this base class) or :class:`CPUOffloadPolicy`."""


@dataclasses.dataclass
class CPUOffloadPolicy(OffloadPolicy):
    """Keep the sharded parameters, gradients and optimizer state on the CPU."""

    pin_memory: bool = True


@dataclasses.dataclass
class DataParallelMeshDims:
    """Which device-mesh dimensions ``fully_shard`` shards over and replicates over."""

    shard: Any = None
    replicate: Any = None


class FSDPModule:
    """The class ``fully_shard`` mixes into a module it shards (no module is sharded yet: ``isinstance`` is
    False)."""

    def __new__(cls, *args, **kwargs):
        raise _missing("FSDPModule")


class FullyShardedDataParallel(Module):
    """A module whose parameters are sharded over the processes (not built yet: wrapping raises
    NotImplementedError; ``isinstance`` checks work)."""

    def __init__(self, module, *args, **kwargs):
        raise _missing("FullyShardedDataParallel")


def fully_shard(module, **kwargs):
    """Shard ``module``'s parameters over the data-parallel processes (not built yet)."""
    raise _missing("fully_shard")


def register_fsdp_forward_method(module, method_name: str) -> None:
    """Make ``module.<method_name>`` gather the parameters as ``forward`` does (not built yet)."""
    raise _missing("register_fsdp_forward_method")

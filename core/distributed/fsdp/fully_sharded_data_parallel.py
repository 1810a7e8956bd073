"""``ember.distributed.fsdp.fully_sharded_data_parallel``: where PyTorch keeps the FSDP wrapper (see
:mod:`ember.distributed.fsdp`; the settings are importable from here too, as in PyTorch)."""
from . import (BackwardPrefetch, CPUOffload, FullOptimStateDictConfig, FullStateDictConfig,  # noqa: F401
               FullyShardedDataParallel, LocalOptimStateDictConfig, LocalStateDictConfig, MixedPrecision,
               OptimStateDictConfig, OptimStateKeyType, ShardedOptimStateDictConfig, ShardedStateDictConfig,
               ShardingStrategy, StateDictConfig, StateDictSettings, StateDictType)

__all__ = ["FullyShardedDataParallel", "OptimStateKeyType"]

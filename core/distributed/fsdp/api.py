"""``ember.distributed.fsdp.api``: where PyTorch keeps FSDP's settings (see :mod:`ember.distributed.fsdp`)."""
from . import (BackwardPrefetch, CPUOffload, FullOptimStateDictConfig, FullStateDictConfig, LocalOptimStateDictConfig,
               LocalStateDictConfig, MixedPrecision, OptimStateDictConfig, ShardedOptimStateDictConfig,
               ShardedStateDictConfig, ShardingStrategy, StateDictConfig, StateDictSettings, StateDictType)

__all__ = ["ShardingStrategy", "BackwardPrefetch", "MixedPrecision", "CPUOffload", "StateDictType", "StateDictConfig",
           "FullStateDictConfig", "LocalStateDictConfig", "ShardedStateDictConfig", "OptimStateDictConfig",
           "FullOptimStateDictConfig", "LocalOptimStateDictConfig", "ShardedOptimStateDictConfig",
           "StateDictSettings"]

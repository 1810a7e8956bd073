"""``ember.distributed._composable.fsdp``: the older home of ``fully_shard`` and its policies (see
:mod:`ember.distributed.fsdp`)."""
from ...fsdp import (CPUOffloadPolicy, FSDPModule, MixedPrecisionPolicy, OffloadPolicy, fully_shard,
                     register_fsdp_forward_method)

__all__ = ["CPUOffloadPolicy", "FSDPModule", "MixedPrecisionPolicy", "OffloadPolicy", "fully_shard",
           "register_fsdp_forward_method"]

"""``ember.distributed.algorithms.ddp_comm_hooks`` (``torch.distributed.algorithms.ddp_comm_hooks``).

Only the post-local-SGD state is here, which Lightning's DDP strategy checks its settings against; ember's
``DistributedDataParallel`` has no ``register_comm_hook`` yet, so the hooks themselves raise NotImplementedError.
"""

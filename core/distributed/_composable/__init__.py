"""``ember.distributed._composable`` (``torch.distributed._composable``): where PyTorch first kept ``fully_shard``."""

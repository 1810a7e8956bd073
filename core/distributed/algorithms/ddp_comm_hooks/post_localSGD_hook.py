"""Post-local SGD (``torch.distributed.algorithms.ddp_comm_hooks.post_localSGD_hook``): all-reduce gradients over
the whole group for the first ``start_localSGD_iter`` steps, then only within a subgroup.

>>> from ember.distributed.algorithms.ddp_comm_hooks.post_localSGD_hook import PostLocalSGDState
>>> state = PostLocalSGDState(process_group=None, subgroup=None, start_localSGD_iter=2)
>>> state.iter, state.post_local_gradient_allreduce
(0, True)
"""
from __future__ import annotations

import logging

logger = logging.getLogger(__name__)

__all__ = ["PostLocalSGDState", "post_localSGD_hook"]


class PostLocalSGDState:
    """The settings and step count of post-local SGD: ``process_group`` (None: the default group) until step
    ``start_localSGD_iter``, ``subgroup`` (None: each machine's processes) after it, where gradients are still
    all-reduced when ``post_local_gradient_allreduce``."""

    __slots__ = ("process_group", "subgroup", "start_localSGD_iter", "post_local_gradient_allreduce", "iter")

    def __init__(self, process_group, subgroup, start_localSGD_iter: int, post_local_gradient_allreduce: bool = True):
        logger.info("Local SGD will be started after %s iterations", start_localSGD_iter)
        self.process_group, self.subgroup = process_group, subgroup
        self.start_localSGD_iter = start_localSGD_iter
        self.post_local_gradient_allreduce = post_local_gradient_allreduce
        self.iter = 0

    def maybe_increase_iter(self, bucket) -> None:
        """Count a step when ``bucket`` is the step's last one (bucket 0, reduced last)."""
        if bucket.is_last():
            self.iter += 1
        if self.iter == self.start_localSGD_iter:
            logger.info("Start to apply local SGD after %s iterations.", self.iter)


def post_localSGD_hook(state: PostLocalSGDState, bucket):
    """The communication hook itself: ember's DistributedDataParallel has no ``register_comm_hook`` to run it."""
    raise NotImplementedError("post_localSGD_hook: ember's DistributedDataParallel does not run communication hooks "
                              "(register_comm_hook) yet")

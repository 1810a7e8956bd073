"""ember.multiprocessing: Python's ``multiprocessing`` with tensors in shared memory.

Everything in :mod:`multiprocessing` is here.  Tensors put on queues or pipes,
or passed to a ``Process`` (``spawn`` / ``forkserver``), move their storage into
shared memory and only a handle crosses, so a change made in one process is
seen by all (Hogwild training).  ``.grad`` is shared along with the data.

>>> import ember, ember.multiprocessing as mp
>>> q = mp.get_context("spawn").SimpleQueue()
>>> x = ember.zeros(3)
>>> q.put(x); x.is_shared()
True
>>> y = q.get(); y += 1; x
tensor([1., 1., 1.])
"""
import multiprocessing
from multiprocessing import *  # noqa: F403

from .reductions import init_reductions
from ..shared_memory import get_all_sharing_strategies, get_sharing_strategy, set_sharing_strategy
from .spawn import ProcessContext, ProcessExitedException, ProcessRaisedException, spawn, start_processes

__all__ = [*multiprocessing.__all__, "get_all_sharing_strategies", "get_sharing_strategy", "set_sharing_strategy",
           "spawn", "start_processes", "ProcessContext", "ProcessExitedException", "ProcessRaisedException"]

init_reductions()

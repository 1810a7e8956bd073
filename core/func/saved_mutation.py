"""``ember.autograd.graph.allow_mutation_on_saved_tensors``: in-place writes to tensors saved for backward copy the
saved value first. It watches in-place ops at the dispatch interception point, so it lives above dispatch and is
shown in ``ember.autograd.graph``."""
from __future__ import annotations

from ..autograd import graph
from ..autograd.graph import saved_tensors_hooks
from ..interception import intercept
from ..writes import inplace
from ..tensor import Tensor, _vowner


class allow_mutation_on_saved_tensors:
    """Let in-place ops change tensors saved for backward: the saved value is copied before the write.

    Backward then sees the values as they were when saved, instead of
    failing on the version check.
    """

    def __enter__(self):
        saved = {}  # id of the storage owner -> [holder, ...]; holder = [tensor, copied]

        owner = _vowner

        def pack(t):
            holder = [t, False]
            saved.setdefault(id(owner(t)), []).append(holder)
            return holder

        def unpack(holder):
            return holder[0]

        def handler(kind, Op, args, run):
            if kind is inplace and args and isinstance(args[0], Tensor):
                for holder in saved.get(id(owner(args[0])), ()):
                    if not holder[1]:
                        holder[0], holder[1] = holder[0].detach().clone(), True
            return run(*args)

        self.hooks = saved_tensors_hooks(pack, unpack)
        self.intercept = intercept(handler)
        self.hooks.__enter__()
        self.intercept.__enter__()
        return self

    def __exit__(self, *exc):
        self.intercept.__exit__(*exc)
        self.hooks.__exit__(*exc)
        return False


graph.allow_mutation_on_saved_tensors = allow_mutation_on_saved_tensors

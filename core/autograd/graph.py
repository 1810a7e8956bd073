"""The backward graph, seen from Python: nodes, edges, saved-tensor hooks and multi-tensor gradient hooks.

Every tensor an operation saves for backward can pass through a pair of hooks:
``pack_hook(tensor)`` when it is saved, ``unpack_hook(packed)`` when backward
reads it.  The hooks of the innermost open :class:`saved_tensors_hooks` apply.

>>> import ember
>>> x = ember.tensor([1.0, 2.0], requires_grad=True)
>>> seen = []
>>> with ember.autograd.graph.saved_tensors_hooks(lambda t: seen.append("pack") or t, lambda t: t):
...     y = (x * x).sum()
>>> seen
['pack', 'pack']
"""
from __future__ import annotations

import functools
from typing import NamedTuple

from ..tensor import RemovableHandle, Tensor
from .engine import TASK, WATCHERS
from .function import AccumulateGrad, Node, SAVED_HOOKS, grad_edge

__all__ = ["Node", "GradientEdge", "get_gradient_edge", "increment_version", "saved_tensors_hooks",
           "save_on_cpu", "disable_saved_tensors_hooks", "register_multi_grad_hook"]
# allow_mutation_on_saved_tensors is set here by ember.func.saved_mutation (it watches dispatch, a floor above)


class GradientEdge(NamedTuple):
    """An edge of the backward graph: the gradient for output ``output_nr`` of ``node``."""

    node: Node
    output_nr: int
    ownership_token: object = None


def get_gradient_edge(tensor) -> GradientEdge:
    """The edge along which ``tensor``'s gradient flows (its grad_fn, or its leaf's AccumulateGrad)."""
    if not tensor.requires_grad:
        raise RuntimeError("It is not possible to get the gradient edge for a Tensor that does not require "
                           "gradients")
    return GradientEdge(*grad_edge(tensor))


def increment_version(tensor) -> None:
    """Bump the version counter of ``tensor`` (or of each tensor of an iterable), as an in-place write does."""
    for t in (tensor,) if isinstance(tensor, Tensor) else tensor:
        t._bump()


# --------------------------------------------------------------------------- saved-tensor hooks
class saved_tensors_hooks:
    """Pack every tensor saved for backward with ``pack_hook`` and read it back with ``unpack_hook``.

    ``pack_hook(tensor)`` may return any object; ``unpack_hook(obj)`` must return
    a tensor with the saved tensor's values.  Nested contexts: the innermost
    pair applies.  The hooks are per thread.
    """

    def __init__(self, pack_hook, unpack_hook):
        self.pack_hook = pack_hook
        self.unpack_hook = unpack_hook

    def __enter__(self):
        if SAVED_HOOKS.disabled is not None:
            raise RuntimeError(SAVED_HOOKS.disabled)
        SAVED_HOOKS.stack = SAVED_HOOKS.stack + ((self.pack_hook, self.unpack_hook),)
        return self

    def __exit__(self, *exc):
        SAVED_HOOKS.stack = SAVED_HOOKS.stack[:-1]
        return False


class save_on_cpu(saved_tensors_hooks):
    """Keep the tensors saved for backward on the CPU and bring them back to their device for backward.

    ``pin_memory=True`` stages them in page-locked memory (where the device has it).
    """

    def __init__(self, pin_memory: bool = False, device_type: str = "cuda"):
        def pack(t):
            dev = t.device
            if t.device.type == "cpu" and not pin_memory:
                return dev, t
            cpu = t.detach().to("cpu", copy=True)
            if pin_memory:
                pin = getattr(cpu, "pin_memory", None)
                if pin is not None:
                    cpu = pin()
            return dev, cpu

        def unpack(packed):
            dev, t = packed
            return t.to(dev, non_blocking=pin_memory)

        super().__init__(pack, unpack)


class disable_saved_tensors_hooks:
    """Forbid saved-tensor hooks in this block: opening one raises ``RuntimeError(error_message)``, and so does
    entering the block while hooks are open."""

    def __init__(self, error_message: str):
        self.error_message = error_message

    def __enter__(self):
        if SAVED_HOOKS.stack:
            raise RuntimeError(self.error_message)
        self.prev = SAVED_HOOKS.disabled
        SAVED_HOOKS.disabled = self.error_message
        return self

    def __exit__(self, *exc):
        SAVED_HOOKS.disabled = self.prev
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with disable_saved_tensors_hooks(self.error_message):
                return fn(*args, **kwargs)

        return wrapper


# --------------------------------------------------------------------------- multi-tensor gradient hooks
def _reachable(task):
    """The nodes (leaves included) the backward ``task`` can reach, computed once per task."""
    cache = _REACH.get(id(task))
    if cache is not None and cache[0] is task:
        return cache[1]
    roots, filter_state = task
    seen = set()
    stack = [fn for fn, _ in roots if fn is not None]
    while stack:
        fn = stack.pop()
        if fn in seen:
            continue
        seen.add(fn)
        stack.extend(n for n, _ in fn.next_functions if n is not None and n not in seen)
    if filter_state is not None:
        needed, targets = filter_state[0], filter_state[1]
        seen = {fn for fn in seen if fn in needed or (fn, 0) in targets}
    _REACH.clear()  # one task at a time is enough
    _REACH[id(task)] = (task, seen)
    return seen


_REACH: dict = {}


def _will_run(task, t):
    node = grad_edge(t)[0]
    if node is None:
        return False
    if type(node) is AccumulateGrad and task[1] is not None and not task[1][4]:
        return False  # autograd.grad: leaves' hooks do not run
    return node in _reachable(task)


def register_multi_grad_hook(tensors, fn, *, mode: str = "all"):
    """Call ``fn`` once the gradients of ``tensors`` have been computed in a backward.

    ``mode="all"``: ``fn(grads)`` with one gradient per tensor (None for those
    the backward does not reach), after all of them are ready.
    ``mode="any"``: ``fn(grad)`` with the first gradient computed among them.
    Returns a handle whose ``remove()`` unregisters it.
    """
    if mode not in ("all", "any"):
        raise ValueError(f"Expects mode to be one of ('all', 'any') but got {mode}")
    tensors = tuple(tensors)
    for t in tensors:
        if not t.requires_grad:
            raise RuntimeError("register_multi_grad_hook: every tensor must require grad")
    slot = [None, None]  # the backward seen last (its task) and what this hook has gathered in it

    def entry(make):
        task = TASK.current
        if slot[0] is not task:
            slot[0], slot[1] = task, make(task)
        return slot[1]

    if mode == "any":
        def make(i):
            def hook(grad):
                seen = entry(lambda task: [False])
                if not seen[0]:
                    seen[0] = True
                    fn(grad)
            return hook
    else:
        def make(i):
            def hook(grad):
                e = entry(lambda task: [[None] * len(tensors), 0,
                                        sum(1 for t in tensors if task is None or _will_run(task, t))])
                e[0][i] = grad
                e[1] += 1
                if e[1] == e[2]:
                    fn(list(e[0]))
            return hook

    handles = [t.register_hook(make(i)) for i, t in enumerate(tensors)]
    WATCHERS[0] += 1
    return _MultiHandle(handles)


class _MultiHandle(RemovableHandle):
    def __init__(self, handles):
        self.handles = handles

    def remove(self):
        if self.handles:
            WATCHERS[0] -= 1
        for h in self.handles:
            h.remove()
        self.handles = []

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()

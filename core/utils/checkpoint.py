"""``ember.utils.checkpoint``: trade compute for memory by recomputing a segment's forward in backward.

``checkpoint(fn, *args, use_reentrant=False)`` runs ``fn`` without recording a graph, so none of its intermediate
tensors stay alive; only its inputs do. In backward it restores the random-number state that ``fn`` saw (so
dropout draws the same mask), runs ``fn`` again with recording on, and backpropagates through that recomputation.
The gradients equal those of ``fn(*args)`` without checkpointing.

Gradients reach the tensor arguments and every tensor that requires grad which ``fn`` reads directly (module
parameters), which the forward pass finds at the dispatch interception point. ``use_reentrant=True`` gives PyTorch's
reentrant variant: gradients reach only tensor arguments that require grad and the parameters used, and at least
one argument must require grad for any gradient to flow.
"""
from __future__ import annotations

import contextlib
import enum
import threading
import warnings

from ..autograd.engine import grad as _grad
from ..autograd.function import Function
from ..autograd.grad_mode import enable_grad, no_grad
from ..interception import intercept
from ..random import default_generator
from ..tensor import Tensor

__all__ = ["checkpoint", "checkpoint_sequential", "CheckpointError", "CheckpointFunction", "CheckpointPolicy",
           "detach_variable", "get_device_states", "set_device_states", "noop_context_fn",
           "set_checkpoint_debug_enabled", "set_checkpoint_early_stop", "check_backward_validity"]


class CheckpointError(RuntimeError):
    """A checkpointed segment's recomputation disagreed with its forward pass."""


class CheckpointPolicy(enum.Enum):
    MUST_SAVE = 0
    PREFER_SAVE = 1
    MUST_RECOMPUTE = 2
    PREFER_RECOMPUTE = 3


def noop_context_fn():
    return contextlib.nullcontext(), contextlib.nullcontext()


_DEBUG = [False]


@contextlib.contextmanager
def set_checkpoint_debug_enabled(enabled):
    """Accepted for PyTorch compatibility (ember's recomputation has no debug trace)."""
    prev, _DEBUG[0] = _DEBUG[0], enabled
    try:
        yield
    finally:
        _DEBUG[0] = prev


@contextlib.contextmanager
def set_checkpoint_early_stop(enable: bool):
    """Accepted for PyTorch compatibility: ember always recomputes the whole segment."""
    yield


def detach_variable(inputs):
    """Detached copies of the tensors in ``inputs`` keeping their ``requires_grad``."""
    if not isinstance(inputs, tuple):
        raise RuntimeError(f"Only tuple of tensors is supported. Got Unsupported input type: {type(inputs).__name__}")
    out = []
    for x in inputs:
        if isinstance(x, Tensor):
            d = x.detach()
            d.requires_grad = x.requires_grad
            out.append(d)
        else:
            out.append(x)
    return tuple(out)


def check_backward_validity(inputs) -> None:
    if not any(isinstance(x, Tensor) and x.requires_grad for x in inputs):
        warnings.warn("None of the inputs have requires_grad=True. Gradients will be None", stacklevel=2)


def _devices(tensors):
    return list(dict.fromkeys(t.device for t in tensors if t.device.type != "cpu"))


def get_device_states(*args):
    """``(devices, rng states)`` of the non-CPU devices the tensor arguments are on."""
    devs = _devices([a for a in args if isinstance(a, Tensor)])
    return devs, [default_generator(d).get_state() for d in devs]


def set_device_states(devices, states, *, device_type=None) -> None:
    for d, s in zip(devices, states):
        default_generator(d).set_state(s)


class _RngState:
    """The CPU and device generator states at the start of the forward pass, to replay in the recomputation."""

    def __init__(self, tensors, preserve: bool):
        self.preserve = preserve
        if preserve:
            self.cpu = default_generator("cpu").get_state()
            self.devices, self.states = get_device_states(*tensors)

    @contextlib.contextmanager
    def replayed(self):
        if not self.preserve:
            yield
            return
        now_cpu = default_generator("cpu").get_state()
        now_dev = [default_generator(d).get_state() for d in self.devices]
        default_generator("cpu").set_state(self.cpu)
        set_device_states(self.devices, self.states)
        try:
            yield
        finally:
            default_generator("cpu").set_state(now_cpu)
            set_device_states(self.devices, now_dev)


def _used_grad_tensors(fn, args, kwargs):
    """Run ``fn`` without a graph; also return the tensors requiring grad it read that are not its arguments."""
    me = threading.get_ident()
    seen, found = {id(a) for a in args if isinstance(a, Tensor)}, []

    def handler(kind, Op, op_args, run):
        if threading.get_ident() == me:
            for a in op_args:
                if isinstance(a, Tensor) and a.requires_grad and id(a) not in seen:
                    seen.add(id(a))
                    found.append(a)
        return run(*op_args)

    with no_grad(), intercept(handler):
        out = fn(*args, **kwargs)
    return out, found


class _Segment(Function):
    """The graph node of a checkpointed segment: its inputs are the segment's arguments and the tensors requiring
    grad it read; its backward recomputes the segment and differentiates the recomputation."""

    @staticmethod
    def forward(ctx, state, *inputs):
        ctx.state = state
        outs = state["outputs"]
        return outs[0] if len(outs) == 1 else tuple(outs)

    @staticmethod
    def backward(ctx, *grads):
        st = ctx.state
        detached = [d for d in detach_variable(tuple(st["args"])) if isinstance(d, Tensor)]
        with st["rng"].replayed(), enable_grad():
            out = st["fn"](*_rebuild(st["args"], detached), **st["kwargs"])
        outs = [o for o in _as_tuple(out) if isinstance(o, Tensor)]
        pairs = [(o, g) for o, g in zip(outs, grads) if o.requires_grad and g is not None]
        want = [d for d in detached if d.requires_grad] + list(st["captured"])
        found = iter(_grad([o for o, _ in pairs], want, [g for _, g in pairs], allow_unused=True)
                     if pairs and want else [None] * len(want))
        arg_grads = [next(found) if d.requires_grad else None for d in detached]
        return (None, *arg_grads, *[next(found) for _ in st["captured"]])


def _rebuild(args, detached):
    """``args`` with each tensor replaced, in order, by its detached copy."""
    it = iter(detached)
    return [next(it) if isinstance(a, Tensor) else a for a in args]


def checkpoint(function, *args, use_reentrant: bool | None = None, context_fn=noop_context_fn,
               determinism_check: str = "default", debug: bool = False, preserve_rng_state: bool = True, **kwargs):
    """``function(*args, **kwargs)``, recomputed in backward instead of keeping its intermediate tensors."""
    if use_reentrant is None:
        warnings.warn("ember.utils.checkpoint: the use_reentrant parameter should be passed explicitly. "
                      "use_reentrant=False is recommended, but if you need to preserve the current default behavior, "
                      "you can pass use_reentrant=True. Refer to the PyTorch docs for details on the differences "
                      "between the two variants.", UserWarning, stacklevel=2)
        use_reentrant = True
    if use_reentrant:
        if context_fn is not noop_context_fn or debug:
            raise ValueError("Passing `context_fn` or `debug` is only supported when use_reentrant=False.")
        if kwargs:
            raise ValueError("Unexpected keyword arguments: " + ",".join(kwargs))
        check_backward_validity(args)
    tensors = [a for a in args if isinstance(a, Tensor)]
    versions = [t._version for t in tensors]
    rng = _RngState(tensors, preserve_rng_state)
    out, captured = _used_grad_tensors(function, args, kwargs)
    if any(t._version != v for t, v in zip(tensors, versions)):
        warnings.warn("checkpoint: the checkpointed function modified one of its inputs in place; the "
                      "recomputation in backward sees the modified value, so its gradients may differ from an "
                      "unchecked run", UserWarning, stacklevel=2)
    if use_reentrant and not any(t.requires_grad for t in tensors):
        return out
    outs = out if isinstance(out, tuple) else (out,)
    if not any(isinstance(o, Tensor) for o in outs):
        return out
    state = {"fn": function, "args": args, "kwargs": kwargs, "captured": captured,
             "rng": rng, "outputs": [o for o in outs if isinstance(o, Tensor)]}
    wrapped = iter(_as_tuple(_Segment.apply(state, *tensors, *captured)))
    result = tuple(next(wrapped) if isinstance(o, Tensor) else o for o in outs)
    return result if isinstance(out, tuple) else result[0]


def _as_tuple(x):
    return x if isinstance(x, tuple) else (x,)


class CheckpointFunction(_Segment):
    """PyTorch's name for the reentrant checkpoint's Function (``checkpoint(..., use_reentrant=True)``)."""


def checkpoint_sequential(functions, segments: int, input, use_reentrant: bool | None = None, **kwargs):
    """Run ``functions`` (a Sequential or a list of modules/functions) in ``segments`` checkpointed chunks; the last
    chunk runs normally."""
    if use_reentrant is None:
        warnings.warn("ember.utils.checkpoint.checkpoint_sequential: the use_reentrant parameter should be passed "
                      "explicitly. use_reentrant=False is recommended.", UserWarning, stacklevel=2)
        use_reentrant = True
    preserve = kwargs.pop("preserve_rng_state", True)
    if kwargs:
        raise ValueError("Unexpected keyword arguments: " + ",".join(kwargs))
    fns = list(functions.children()) if hasattr(functions, "children") else list(functions)
    size = len(fns) // segments
    end = -1

    def run_chunk(start, stop):
        def forward(x):
            for f in fns[start:stop + 1]:
                x = f(x)
            return x

        return forward

    for start in range(0, size * (segments - 1), size):
        end = start + size - 1
        input = checkpoint(run_chunk(start, end), input, use_reentrant=use_reentrant, preserve_rng_state=preserve)
    return run_chunk(end + 1, len(fns) - 1)(input)

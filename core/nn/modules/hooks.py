"""Full backward hooks (identity Functions around a module call that see its input and output gradients) and the
deprecated non-full ones (a hook on the grad_fn of the module's output)."""
from __future__ import annotations

import weakref
from collections import OrderedDict

from ...autograd.function import Function
from ...ops.nn import Linear
from ...ops.nn_conv import Conv
from ...tensor import Tensor


class _Outputs(Function):
    """Identity on the outputs: its backward sees grad_output and runs the backward pre-hooks."""

    @staticmethod
    def forward(ctx, state, *outs):
        ctx.state = state
        return tuple(o.view_as(o) for o in outs)

    @staticmethod
    def backward(ctx, *grads):
        st = ctx.state
        module = st["module"]
        for hook in list(module._backward_pre_hooks.values()):
            r = hook(module, grads)
            if r is not None:
                grads = tuple(r) if isinstance(r, (tuple, list)) else (r,)
        st["grad_output"] = grads
        if not st["has_inputs"]:
            for hook in list(module._backward_hooks.values()):
                hook(module, (None,), grads)
        return (None, *grads)


class _Inputs(Function):
    """Identity on the inputs: its backward sees grad_input and runs the full backward hooks."""

    @staticmethod
    def forward(ctx, state, *ins):
        ctx.state = state
        return tuple(i.view_as(i) for i in ins)

    @staticmethod
    def backward(ctx, *grads):
        st = ctx.state
        module = st["module"]
        for hook in list(module._backward_hooks.values()):
            r = hook(module, grads, st.get("grad_output", ()))
            if r is not None:
                grads = tuple(r) if isinstance(r, (tuple, list)) else (r,)
        return (None, *grads)


class RemovableHandle:
    """What a ``register_*_hook`` of a Module returns: ``remove()`` deletes the hook (by its integer ``id``) from
    the module's hook dict and from the flag dicts beside it (``_forward_hooks_with_kwargs``, ...).

    >>> import ember
    >>> m = ember.nn.Linear(2, 2)
    >>> h = m.register_forward_hook(lambda mod, args, out: None, with_kwargs=True)
    >>> h.id in m._forward_hooks and h.id in m._forward_hooks_with_kwargs
    True
    >>> h.remove(); (h.id in m._forward_hooks, h.id in m._forward_hooks_with_kwargs)
    (False, False)
    """

    next_id: int = 0

    def __init__(self, hooks_dict, *, extra_dict=None) -> None:
        self.hooks_dict_ref = weakref.ref(hooks_dict)
        self.id = RemovableHandle.next_id
        RemovableHandle.next_id += 1
        extras = [extra_dict] if isinstance(extra_dict, dict) else (extra_dict or [])
        self.extra_dict_ref = tuple(weakref.ref(d) for d in extras)

    def remove(self) -> None:
        for ref in (self.hooks_dict_ref, *self.extra_dict_ref):
            d = ref()
            if d is not None:
                d.pop(self.id, None)

    def __getstate__(self):
        return self.hooks_dict_ref(), self.id, tuple(ref() for ref in self.extra_dict_ref)

    def __setstate__(self, state) -> None:
        hooks, self.id = state[0], state[1]
        self.hooks_dict_ref = weakref.ref(OrderedDict() if hooks is None else hooks)  # None: a dead reference
        RemovableHandle.next_id = max(RemovableHandle.next_id, self.id + 1)
        self.extra_dict_ref = tuple(weakref.ref(d) for d in (state[2] if len(state) > 2 and state[2] else ()))

    def __enter__(self) -> "RemovableHandle":
        return self

    def __exit__(self, *exc) -> None:
        self.remove()


class WrappedHook:
    """A hook stored in a Module's hook dict that is called with the module first (``hook(module, *args)``), the
    module held weakly as PyTorch's ``_WrappedHook`` holds it (``register_load_state_dict_pre_hook``)."""

    def __init__(self, hook, module=None):
        self.hook = hook
        self.__name__ = getattr(hook, "__name__", type(hook).__name__)
        self.with_module = module is not None
        if self.with_module:
            self.module = weakref.ref(module)

    def __call__(self, *args):
        if not self.with_module:
            return self.hook(*args)
        module = self.module()
        if module is None:
            raise RuntimeError("You are trying to call the hook of a dead Module!")
        return self.hook(module, *args)

    def __getstate__(self):
        state = {"hook": self.hook, "with_module": self.with_module}
        if self.with_module:
            state["module"] = self.module()
        return state

    def __setstate__(self, state):
        self.hook, self.with_module = state["hook"], state["with_module"]
        self.__name__ = getattr(self.hook, "__name__", type(self.hook).__name__)
        if self.with_module:
            if state["module"] is None:
                raise RuntimeError("You are trying to revive the hook of a dead Module!")
            self.module = weakref.ref(state["module"])


def call_with_backward_hooks(module, args, kwargs):
    """Run ``module.forward`` with its inputs and outputs wrapped so backward hooks fire."""
    idx = [i for i, a in enumerate(args) if isinstance(a, Tensor) and a.requires_grad]
    state = {"module": module, "has_inputs": bool(idx)}
    if idx:
        wrapped = _Inputs.apply(state, *[args[i] for i in idx])
        args = list(args)
        for i, w in zip(idx, wrapped):
            args[i] = w
        args = tuple(args)
    out = module.forward(*args, **kwargs)
    single = isinstance(out, Tensor)
    outs = (out,) if single else out
    if isinstance(outs, tuple) and outs and all(isinstance(o, Tensor) for o in outs) \
            and any(o.requires_grad for o in outs):
        outs = _Outputs.apply(state, *outs)
        return outs[0] if single else tuple(outs)
    return out


# --------------------------------------------------------------------------- the deprecated (non-full) hooks
class LegacyHook:
    """A hook of ``Module.register_backward_hook`` as a hook on the grad_fn of the module's output (the last op of
    its forward): ``hook(module, grad_input, grad_output)`` with that node's gradients as PyTorch's graph has them
    (None for an input that needs no gradient), and a returned tuple checked as PyTorch checks it."""

    def __init__(self, hook, module, node):
        self.hook, self.module, self.node = hook, module, weakref.ref(node)
        self.__name__ = getattr(hook, "__name__", type(hook).__name__)

    def __call__(self, grad_inputs, grad_outputs):
        node = self.node()
        shown, back = _torch_layout(node, grad_inputs, grad_outputs)
        r = self.hook(self.module, shown, grad_outputs)
        if r is None:
            return None
        _check_replacement(self.__name__, shown, r)
        return back(r)


def _torch_layout(node, grads, grad_outputs):
    """``(shown, back)``: the gradients PyTorch's last node would have in place of ``node``'s, and the map from a
    replacement of them back to ``node``'s."""
    grads = tuple(None if nxt is None else g for g, (nxt, _) in zip(grads, node.next_functions))
    if isinstance(node, Linear):
        return _linear_layout(node, grads, grad_outputs[0])
    if isinstance(node, Conv) and len(grads) == 2:  # PyTorch's convolution node keeps an edge for a missing bias
        return grads + (None,), lambda r: r[:2]
    return grads, lambda r: r


def _linear_layout(node, grads, g):
    """PyTorch computes a 2-d linear map as ``addmm(bias, input, weight.t())`` (``mm(input, weight.t())`` without
    bias) and any other one through that GEMM on the flattened input, whose last node is the view back."""
    if len(node._shapes[0][0]) != 2:
        def back(r):
            res = type(node).backward(node, r[0].reshape(g.shape))
            return tuple(None if nxt is None else x for x, (nxt, _) in zip(res, node.next_functions))
        return (g.reshape(-1, g.shape[-1]),), back
    gx, gw, *gb = grads
    gwt = None if gw is None else gw.t()
    if not gb:
        return (gx, gwt), lambda r: (r[0], None if r[1] is None else r[1].t())
    return (gb[0], gx, gwt), lambda r: (r[1], None if r[2] is None else r[2].t(), r[0])


def _check_replacement(name, old, new):
    if not isinstance(new, tuple):
        raise TypeError(f"expected tuple, but hook returned '{type(new).__name__}'")
    if len(new) != len(old):
        raise RuntimeError(f"hook '{name}' has returned an incorrect number of values (got {len(new)}, but "
                           f"expected {len(old)})")
    for o, n in zip(old, new):
        if n is None:
            continue
        if not isinstance(n, Tensor):
            raise TypeError(f"expected Variable, but hook returned '{type(n).__name__}'")
        if o is None:
            raise RuntimeError("can't replace a None gradient with a non-None value")
        if n.shape != o.shape:
            raise RuntimeError(f"hook '{name}' has changed the size of value")
        if n.dtype != o.dtype or n.device != o.device:
            raise RuntimeError(f"hook '{name}' has changed the type of value (was {o.type()} got {n.type()})")

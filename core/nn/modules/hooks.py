"""Full backward hooks: identity Functions around a module call that see its input and output gradients."""
from __future__ import annotations

from ...autograd.function import Function
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

"""Calling a Module with parameters and buffers given as arguments: ``functional_call``, ``stack_module_state``."""
from __future__ import annotations

from ..nn.utils.stateless import _functional_call
from ..ops.shape import stack


def functional_call(module, parameter_and_buffer_dicts, args=None, kwargs=None, *, tie_weights=True, strict=False):
    """``module(*args, **kwargs)`` with its parameters and buffers replaced by the given tensors for the call.

    ``parameter_and_buffer_dicts``: a dict ``{dotted name: tensor}`` or a tuple of such dicts.  The module
    is unchanged afterwards.  ``tie_weights``: a value given for one of several tied names serves them all.
    ``strict``: the names must be exactly the module's parameters and buffers.

    >>> import ember
    >>> lin = ember.nn.Linear(2, 1)
    >>> ember.func.functional_call(lin, {"weight": ember.ones(1, 2), "bias": ember.zeros(1)}, (ember.ones(1, 2),))
    tensor([[2.]])
    """
    if isinstance(parameter_and_buffer_dicts, dict):
        values = parameter_and_buffer_dicts
    elif isinstance(parameter_and_buffer_dicts, (tuple, list)):
        values = {}
        for d in parameter_and_buffer_dicts:
            if not isinstance(d, dict):
                raise ValueError(f"Expected all elements of parameter_and_buffer_dicts to be dictionaries, got "
                                 f"{type(d).__name__}")
            for k, v in d.items():
                if k in values:
                    raise ValueError(f"{k} appeared in multiple dictionaries; behavior of functional call is "
                                     f"ambiguous")
                values[k] = v
    else:
        raise ValueError(f"Expected parameter_and_buffer_dicts to be a dict, or a list/tuple of dicts, but got "
                         f"{type(parameter_and_buffer_dicts)}")
    return _functional_call(module, values, args, kwargs, tie_weights=tie_weights, strict=strict)


def stack_module_state(models):
    """``(params, buffers)``: each model's parameters and buffers stacked along a new first dimension, by name.

    Stacked parameters are new leaves (requiring grad like the originals); use them with ``vmap`` over
    ``functional_call`` to run an ensemble at once.

    >>> import ember
    >>> params, buffers = ember.func.stack_module_state([ember.nn.Linear(3, 2) for _ in range(4)])
    >>> params["weight"].shape
    ember.Size([4, 2, 3])
    """
    models = list(models)
    if not models:
        raise RuntimeError("stack_module_state: Expected at least one model, got 0.")
    if not (all(m.training for m in models) or not any(m.training for m in models)):
        raise RuntimeError("stack_module_state: Expected all models to have the same training/eval mode.")
    kind = type(models[0])
    if not all(type(m) is kind for m in models):
        raise RuntimeError("stack_module_state: Expected all models to be of the same class.")
    all_params = [dict(m.named_parameters()) for m in models]
    params = {}
    for name in all_params[0]:
        ts = [p[name] for p in all_params]
        rg = ts[0].requires_grad
        if any(t.requires_grad != rg for t in ts):
            raise RuntimeError(f"Expected {name} from each model to have the same .requires_grad")
        params[name] = stack([t.detach() for t in ts]).requires_grad_(rg)
    all_buffers = [dict(m.named_buffers()) for m in models]
    buffers = {name: stack([b[name] for b in all_buffers]) for name in all_buffers[0]}
    return params, buffers


__all__ = ["functional_call", "stack_module_state"]

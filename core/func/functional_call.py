"""Calling a Module with parameters and buffers given as arguments: ``functional_call``, ``stack_module_state``."""
from __future__ import annotations

import contextlib

from ..ops.shape import stack


def _owner(module, name):
    """``(submodule, attribute)`` for dotted ``name``."""
    *path, leaf = name.split(".")
    m = module
    for p in path:
        m = getattr(m, p)
    return m, leaf


def _get(m, leaf):
    for store in (m._parameters, m._buffers):
        if leaf in store:
            return store[leaf]
    return m.__dict__.get(leaf)


def _put(m, leaf, value):
    """Set an entry without Module.__setattr__'s checks (a plain tensor may stand in for a Parameter)."""
    if leaf in m._parameters:
        m._parameters[leaf] = value
    elif leaf in m._buffers:
        m._buffers[leaf] = value
    elif value is _ABSENT:
        m.__dict__.pop(leaf, None)
    else:
        m.__dict__[leaf] = value


_ABSENT = object()


def _tied_names(module):
    """Names sharing one tensor object, grouped: ``{name: [every name of the same tensor]}``."""
    groups = {}
    for name, t in list(module.named_parameters(remove_duplicate=False)) + \
            list(module.named_buffers(remove_duplicate=False)):
        groups.setdefault(id(t), []).append(name)
    return {n: names for names in groups.values() if len(names) > 1 for n in names}


@contextlib.contextmanager
def _reparametrized(module, values, tie_weights, strict):
    if strict:
        expected = {n for n, _ in module.named_parameters(remove_duplicate=False)} | \
                   {n for n, _ in module.named_buffers(remove_duplicate=False)}
        missing = sorted(expected - set(values))
        unexpected = sorted(set(values) - expected)
        if missing or unexpected:
            msg = [f"Error(s) in reparametrizing for {type(module).__name__}:"]
            if unexpected:
                msg.append(f"\tUnexpected key(s): {', '.join(repr(k) for k in unexpected)}.")
            if missing:
                msg.append(f"\tMissing key(s): {', '.join(repr(k) for k in missing)}.")
            raise RuntimeError("\n".join(msg))
    values = dict(values)
    if tie_weights:
        for names in _tied_names(module).values():
            given = [n for n in names if n in values]
            if given:
                first = values[given[0]]
                for n in given[1:]:
                    if values[n] is not first:
                        raise ValueError(f"functional_call got multiple values for keys {sorted(given)}, which are "
                                         f"tied. Consider using tie_weights=False")
                for n in names:
                    values.setdefault(n, first)
    saved = []
    try:
        for name, value in values.items():
            m, leaf = _owner(module, name)
            old = _get(m, leaf)
            saved.append((m, leaf, _ABSENT if old is None and leaf not in m._parameters and
                          leaf not in m._buffers else old))
            _put(m, leaf, value)
        yield
    finally:
        for m, leaf, old in reversed(saved):
            _put(m, leaf, old)


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
    if args is None:
        args = ()
    elif not isinstance(args, tuple):
        args = (args,)
    with _reparametrized(module, values, tie_weights, strict):
        return module(*args, **(kwargs or {}))


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

"""``nn.utils.stateless``: call a module with other parameters and buffers in place of its own.

:func:`_reparametrize_module` swaps the given tensors in (tied names follow each other unless
``tie_weights=False``) and puts the originals back on exit, exception or not;
:func:`functional_call` runs the module inside it. ``ember.func.functional_call`` is the same call.

>>> import ember
>>> from ember.nn.utils.stateless import _functional_call as functional_call
>>> m = ember.nn.Linear(2, 1)
>>> params = {"weight": ember.ones(1, 2), "bias": ember.zeros(1)}
>>> functional_call(m, params, (ember.tensor([[1.0, 2.0]]),))
tensor([[3.]])
"""
from __future__ import annotations

import contextlib
import warnings
from typing import Any

from ...tensor import Tensor
from ..modules.module import Module
from ..parallel import DataParallel

__all__ = ["functional_call"]

_MISSING: Any = object()


def _swap_tensor(module: Module, name: str, tensor, allow_missing: bool = False):
    """Put ``tensor`` at ``module.<name>`` (``_MISSING``: delete it); returns what was there."""
    if not isinstance(module, Module):
        raise TypeError(f"{module} is not an instance of torch.nn.Module")
    if tensor is not _MISSING and not isinstance(tensor, Tensor) and tensor is not None:
        raise TypeError(f"{tensor} is not an instance of torch.Tensor")
    if "." in name:
        raise KeyError('tensor name can\'t contain "."')
    if name == "":
        raise KeyError('tensor name can\'t be empty string ""')
    for store in (module._parameters, module._buffers):
        if name in store:
            orig = store[name]
            if tensor is _MISSING:
                del store[name]
            else:
                store[name] = tensor
            return orig
    if hasattr(module, name):
        orig = getattr(module, name)
    elif not allow_missing:
        raise AttributeError(f"{module._get_name()} has no attribute `{name}`")
    else:
        orig = _MISSING
    if orig is not _MISSING and not isinstance(orig, Tensor) and orig is not None:
        raise TypeError(f"attribute `{name}`: {orig} is not an instance of torch.Tensor")
    if tensor is not _MISSING:
        setattr(module, name, tensor)
    elif hasattr(module, name):
        delattr(module, name)
    return orig


class NamedMemberAccessor:
    """Reads and swaps tensors of a module tree by dotted name, remembering the submodules it walked."""

    def __init__(self, module: Module) -> None:
        self.module = module
        self.memo: dict = {}

    def get_submodule(self, name: str) -> Module:
        if not name:
            return self.module
        if name not in self.memo:
            prefix, dot, attr = name.rpartition(".")
            module = self.get_submodule(prefix) if dot else self.module
            submodule = module._modules.get(attr)  # what getattr finds, unless something shadows the child
            if submodule is None or attr in module.__dict__ or hasattr(type(module), attr):
                try:
                    submodule = getattr(module, attr)
                except AttributeError as ex:
                    raise AttributeError(f"{module._get_name()} has no attribute `{attr}`") from ex
            if not isinstance(submodule, Module):
                raise TypeError(f"submodule `{name}`: {submodule} is not an instance of torch.nn.Module")
            self.memo[name] = submodule
        return self.memo[name]

    def swap_tensor(self, name: str, value, allow_missing: bool = False):
        prefix, _, attr = name.rpartition(".")
        module = self.memo.get(prefix) if prefix else self.module
        if module is None:
            module = self.get_submodule(prefix)
        if isinstance(value, Tensor) and attr:  # the usual case, a parameter or buffer replaced: directly
            store = module._parameters
            if attr in store or attr in (store := module._buffers):
                orig = store[attr]
                store[attr] = value
                return orig
        return _swap_tensor(module, attr, value, allow_missing=allow_missing)

    def swap_tensors_dict(self, named_tensors: dict, allow_missing: bool = False):
        """Swap every ``name: tensor``; returns ``(originals, missing names)``. All or nothing."""
        orig_named_tensors, missing_keys = {}, []
        memo, root = self.memo, self.module
        try:
            for name, tensor in named_tensors.items():
                prefix, _, attr = name.rpartition(".")
                module = (memo.get(prefix) or self.get_submodule(prefix)) if prefix else root
                if attr and isinstance(tensor, Tensor):
                    store = module._parameters  # the usual case, swap_tensor's first, inline
                    if attr in store or attr in (store := module._buffers):
                        orig_named_tensors[name] = store[attr]
                        store[attr] = tensor
                        continue
                orig = self.swap_tensor(name, tensor, allow_missing=True)
                if orig is _MISSING:
                    missing_keys.append(name)
                orig_named_tensors[name] = orig
        except Exception:
            for name, orig in orig_named_tensors.items():
                self.swap_tensor(name, orig, allow_missing=True)
            raise
        if missing_keys and not allow_missing:
            for name, orig in orig_named_tensors.items():
                self.swap_tensor(name, orig, allow_missing=True)
            raise RuntimeError(f"Missing key(s): {', '.join(map(repr, missing_keys))}.")
        return orig_named_tensors, missing_keys

    def check_keys(self, keys):
        """``(missing, unexpected)``, sorted: module tensors not in ``keys`` and keys that name none."""
        keys = set(keys)
        valid = {n for n, _ in self.module.named_parameters(remove_duplicate=False)}
        valid |= {n for n, _ in self.module.named_buffers(remove_duplicate=False)}
        return sorted(valid - keys), sorted(keys - valid)


_PLAIN: dict = {}  # Module class -> whether it keeps Module's own traversal


def _plain_traversal(cls) -> bool:
    """Whether Module class ``cls`` keeps Module's own traversal (named_parameters, named_buffers, ...)."""
    plain = _PLAIN.get(cls)
    if plain is None:
        plain = _PLAIN[cls] = (cls.named_parameters is Module.named_parameters
                               and cls.named_buffers is Module.named_buffers
                               and cls.named_modules is Module.named_modules
                               and cls._named_members is Module._named_members)
    return plain


def _names_of(module: Module) -> dict:
    """``{id(tensor): {every dotted name of it}}`` over the module's parameters and buffers, every path."""
    names_of: dict = {}
    for name, t in [*module.named_parameters(remove_duplicate=False), *module.named_buffers(remove_duplicate=False)]:
        names_of.setdefault(id(t), set()).add(name)
    return names_of


def _tied_names(module: Module) -> dict:
    """``{name: {every name of its tensor}}`` for the names whose tensor the module holds under several."""
    tied = _walk_stores(module)
    if tied is None:  # a module class with its own traversal: the general one
        names_of = _names_of(module)
        return {name: names for names in names_of.values() if len(names) > 1 for name in names}
    return tied


def _walk_stores(module: Module, where: dict | None = None):
    """The traversal of named_parameters/named_buffers(remove_duplicate=False), walked over the stores directly
    (its generators cost a per-sample-gradient call more than the rest of the swap): ``{name: {every name of
    its tensor}}`` for the tensors held under several names, and, given ``where``, each dotted name's
    ``(submodule, key)`` entered there.  None when a module of the tree has its own traversal, or (with
    ``where``) a child is shadowed by an attribute (getattr would not find it)."""
    first: dict = {}  # id(tensor) -> its first name, or the set of its names once it has several
    several = []
    todo = [("", module)]
    plain = _PLAIN.get
    while todo:
        prefix, m = todo.pop()
        if not (plain(type(m)) or _plain_traversal(type(m))):
            return None
        for store in (m._parameters, m._buffers):
            for k, t in store.items():
                name = prefix + k
                if where is not None:
                    where[name] = (m, k)
                if t is not None:
                    i = id(t)
                    names = first.get(i)
                    if names is None:
                        first[i] = name
                    elif type(names) is str:
                        first[i] = names = {names, name}
                        several.append(names)
                    else:
                        names.add(name)
        children = m._modules
        if children:
            own = m.__dict__
            for k, sub in children.items():
                if sub is not None:
                    if where is not None and (k in own or hasattr(type(m), k)):
                        return None
                    todo.append((prefix + k + ".", sub))
    return {name: names for names in several for name in names}


def _untie_named_tensors_map(module: Module, parameters_and_buffers: dict) -> dict:
    """The given tensors, each also entered under every name tied to its own (one tensor, several names)."""
    tied = _tied_names(module)
    if not tied:
        return parameters_and_buffers
    return _untie(parameters_and_buffers, tied)


def _untie(parameters_and_buffers: dict, tied: dict) -> dict:
    given_tied = [name for name in parameters_and_buffers if name in tied]
    if not given_tied:
        return parameters_and_buffers
    for name in given_tied:
        names = tied[name]
        given_here = names.intersection(given_tied)
        if len(given_here) > 1 and len({id(parameters_and_buffers[n]) for n in given_here}) != 1:
            raise ValueError(f"functional_call got multiple values for keys {sorted(names)}, which are tied. "
                             "Consider using tie_weights=False")
    untied = dict(parameters_and_buffers)
    for name in given_tied:
        for tied_name in tied[name]:
            untied[tied_name] = parameters_and_buffers[name]
    return untied


@contextlib.contextmanager
def _reparametrize_module(module: Module, parameters_and_buffers: dict, tie_weights: bool = False,
                          strict: bool = False, stack_weights: bool = False):
    """Inside the block, ``module`` holds ``parameters_and_buffers`` in place of its own tensors."""
    accessor, orig = _swap_in(module, parameters_and_buffers, tie_weights, strict)
    try:
        yield
    finally:
        _swap_back(accessor, orig, parameters_and_buffers, stack_weights)


def _swap_in(module: Module, parameters_and_buffers: dict, tie_weights: bool, strict: bool):
    """``(accessor, originals)``: the given tensors put in place of the module's (the block's entry)."""
    if tie_weights and not strict:
        fast = _swap_in_direct(module, parameters_and_buffers)
        if fast is not None:
            return fast
    untied = _untie_named_tensors_map(module, parameters_and_buffers) if tie_weights else parameters_and_buffers
    accessor = NamedMemberAccessor(module)
    if strict:
        missing_keys, unexpected_keys = accessor.check_keys(untied)
        error_msgs = []
        if unexpected_keys:
            error_msgs.append(f"Unexpected key(s): {', '.join(map(repr, unexpected_keys))}.")
        if missing_keys:
            error_msgs.append(f"Missing key(s): {', '.join(map(repr, missing_keys))}.")
        if error_msgs:
            raise RuntimeError("Error(s) in reparametrizing for {}:\n\t{}".format(module._get_name(),
                                                                                 "\n\t".join(error_msgs)))
    orig, _ = accessor.swap_tensors_dict(untied, allow_missing=True)  # (all or nothing)
    return accessor, orig


class _Slots(dict):
    """``{dotted name: (submodule, key)}`` of the tensors :func:`_swap_in_direct` swapped in, and the root."""

    __slots__ = ("module",)


def _swap_in_direct(module: Module, parameters_and_buffers: dict):
    """The usual swap (tied names followed) in one walk over the module tree: each parameter's and buffer's
    dotted name and submodule found, tied tensors recognised, and the given tensors put in place.  None
    (nothing swapped) when a given name is not a parameter or buffer of the module, a value is not a Tensor,
    or the tree has a module with its own traversal or a child shadowed by an attribute: :func:`_swap_in`
    then takes the general path (this one resolves names and ties as it does)."""
    where: dict = {}  # dotted name -> (submodule, key)
    tied = _walk_stores(module, where)
    if tied is None:
        return None
    for name, t in parameters_and_buffers.items():
        if name not in where or not isinstance(t, Tensor):
            return None
    untied = _untie(parameters_and_buffers, tied) if tied else parameters_and_buffers
    slots, orig = _Slots(), {}
    slots.module = module
    for name, t in untied.items():
        m, k = slots[name] = where[name]
        store = m._parameters  # (a parameter before a buffer of the same name, as swap_tensor looks)
        if k not in store:
            store = m._buffers
        orig[name] = store[k]
        store[k] = t
    return slots, orig


def _swap_back(accessor, orig: dict, parameters_and_buffers: dict, stack_weights: bool = False):
    """The originals put back (the block's exit, exception or not)."""
    if type(accessor) is _Slots:  # swapped in directly: put back by the submodules found then
        new, general = {}, None
        for name, o in orig.items():
            m, k = accessor[name]
            store = m._parameters
            if k in store or k in (store := m._buffers):
                new[name] = store[k]
                store[k] = o
            else:  # (the forward removed it)
                general = general or NamedMemberAccessor(accessor.module)
                general.memo[name.rpartition(".")[0]] = m
                new[name] = general.swap_tensor(name, o, allow_missing=True)
        for k in parameters_and_buffers:
            if k in new:
                parameters_and_buffers[k] = new[k]
        return
    if stack_weights:
        orig = dict(reversed(orig.items()))
    new, _ = accessor.swap_tensors_dict(orig, allow_missing=True)
    # tensors replaced inside the block (e.g. a buffer reassigned in forward) are handed back
    parameters_and_buffers.update({k: new[k] for k in parameters_and_buffers if k in new})


def _functional_call(module: Module, parameters_and_buffers: dict, args=None, kwargs=None, *,
                     tie_weights: bool = True, strict: bool = False):
    if isinstance(module, DataParallel):
        raise RuntimeError("The stateless API can't be used with nn.DataParallel module")
    kwargs = {} if kwargs is None else kwargs
    if args is None:
        args = ()
    elif not isinstance(args, tuple):
        args = (args,)
    accessor, orig = _swap_in(module, parameters_and_buffers, tie_weights, strict)  # _reparametrize_module's
    try:
        return module(*args, **kwargs)
    finally:
        _swap_back(accessor, orig, parameters_and_buffers)


def functional_call(module: Module, parameters_and_buffers: dict, args=None, kwargs=None, *,
                    tie_weights: bool = True, strict: bool = False):
    """``module(*args, **kwargs)`` with the named tensors of ``parameters_and_buffers`` in place of its own.

    Names absent from the dict keep the module's tensors (unless ``strict``: then every name must be
    given and no other). With ``tie_weights`` a tensor the module uses under several names is replaced
    under all of them. Deprecated in PyTorch in favour of ``torch.func.functional_call``; warns as it does.
    """
    warnings.warn("`torch.nn.utils.stateless.functional_call` is deprecated as of PyTorch 2.0 and will be removed "
                  "in a future version of PyTorch. Please use `torch.func.functional_call` instead which is a "
                  "drop-in replacement.", FutureWarning, stacklevel=2)
    return _functional_call(module, parameters_and_buffers, args, kwargs, tie_weights=tie_weights, strict=strict)

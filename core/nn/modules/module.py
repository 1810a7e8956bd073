"""``nn.Module``: the base class of every layer and model.

Parameters, buffers and submodules register themselves through ``__setattr__``
into three ordered dicts; one traversal (:meth:`Module._named_members`) serves
``parameters``, ``buffers``, ``named_modules`` and ``state_dict``.

>>> import ember
>>> class Net(ember.nn.Module):
...     def __init__(self):
...         super().__init__()
...         self.fc = ember.nn.Linear(2, 3)
...         self.register_buffer("steps", ember.zeros(()))
...     def forward(self, x):
...         return self.fc(x)
>>> list(Net().state_dict().keys())
['steps', 'fc.weight', 'fc.bias']
"""
from __future__ import annotations

import warnings
from collections import OrderedDict, namedtuple
from typing import Callable, Iterator

from ... import dtypes
from ...autograd.grad_mode import no_grad
from ...ops.conversion import _parse_to
from ...ops.creation import empty_like
from ...tensor import Tensor
from ..parameter import Buffer, Parameter, is_lazy
from .hooks import LegacyHook, RemovableHandle, WrappedHook, call_with_backward_hooks

# scope(module, args, kwargs), which calls ``module._call(args, kwargs)``, while a trace records
CALL_SCOPE: list = [None]

_set = object.__setattr__
_EXTRA_STATE_KEY_SUFFIX = "_extra_state"  # the state_dict key of get_extra_state() (PyTorch's name)


class _IncompatibleKeys(namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])):
    def __repr__(self):
        if not self.missing_keys and not self.unexpected_keys:
            return "<All keys matched successfully>"
        return super().__repr__()

    __str__ = __repr__


def _addindent(s: str, n: int) -> str:
    lines = s.split("\n")
    if len(lines) == 1:
        return s
    return lines[0] + "\n" + "\n".join(" " * n + line for line in lines[1:])


class Module:
    """Base class for neural-network modules: subclass it, assign layers in ``__init__``, write ``forward``."""

    training: bool
    _version = 1
    dump_patches = False
    call_super_init = False
    _is_full_backward_hook = None

    def __init__(self, *args, **kwargs) -> None:
        if args or kwargs:
            raise TypeError(f"{type(self).__name__}.__init__() got unexpected arguments")
        _set(self, "training", True)
        _set(self, "_parameters", OrderedDict())
        _set(self, "_buffers", OrderedDict())
        _set(self, "_non_persistent_buffers_set", set())
        # hook dicts as PyTorch keeps them: {handle id: hook}, the call flags in dicts of their own
        _set(self, "_backward_pre_hooks", OrderedDict())
        _set(self, "_backward_hooks", OrderedDict())
        _set(self, "_is_full_backward_hook", None)
        _set(self, "_forward_hooks", OrderedDict())
        _set(self, "_forward_hooks_with_kwargs", OrderedDict())
        _set(self, "_forward_hooks_always_called", OrderedDict())
        _set(self, "_forward_pre_hooks", OrderedDict())
        _set(self, "_forward_pre_hooks_with_kwargs", OrderedDict())
        _set(self, "_state_dict_hooks", OrderedDict())
        _set(self, "_state_dict_pre_hooks", OrderedDict())
        _set(self, "_load_state_dict_pre_hooks", OrderedDict())
        _set(self, "_load_state_dict_post_hooks", OrderedDict())
        _set(self, "_modules", OrderedDict())

    def forward(self, *args, **kwargs):
        raise NotImplementedError(f'Module [{type(self).__name__}] is missing the required "forward" function')

    # ------------------------------------------------------------------ call
    def __call__(self, *args, **kwargs):
        if CALL_SCOPE[0] is not None:  # a trace records (ember.jit): it keeps the module path of each call
            return CALL_SCOPE[0](self, args, kwargs)
        if not (self._forward_pre_hooks or self._forward_hooks or self._backward_hooks
                or self._backward_pre_hooks):
            return self.forward(*args, **kwargs)
        return self._call_with_hooks(args, kwargs)

    _call_impl = __call__

    def _call(self, args, kwargs):
        """What ``self(*args, **kwargs)`` runs: ``forward`` and the hooks around it.  (``__call__`` spells the
        same test out rather than calling this: a module call is on every forward's path.)"""
        if not (self._forward_pre_hooks or self._forward_hooks or self._backward_hooks
                or self._backward_pre_hooks):
            return self.forward(*args, **kwargs)
        return self._call_with_hooks(args, kwargs)

    def _call_with_hooks(self, args, kwargs, state=None):
        if state is None and self._forward_hooks_always_called:
            # (args, kwargs, ids of the forward hooks run, output so far) as the hooks leave them: on an exception
            # the always_call hooks not yet run see them
            state = [args, kwargs, set(), None]
            try:
                return self._call_with_hooks(args, kwargs, state)
            except Exception:
                self._run_always_called(*state)
                raise
        with_kwargs = self._forward_pre_hooks_with_kwargs
        for hid, hook in list(self._forward_pre_hooks.items()):
            if hid in with_kwargs:
                r = hook(self, args, kwargs)
                if r is not None:
                    if not (isinstance(r, tuple) and len(r) == 2):
                        raise RuntimeError(f"forward pre-hook must return None or a tuple of (new_args, new_kwargs), "
                                           f"but got {r}.")
                    args, kwargs = r
                continue
            r = hook(self, args)
            if r is not None:
                args = r if isinstance(r, tuple) else (r,)
        if state is not None:
            state[0], state[1] = args, kwargs
        full = self._backward_hooks and self._is_full_backward_hook
        if full or self._backward_pre_hooks:
            out = call_with_backward_hooks(self, args, kwargs)
        else:
            out = self.forward(*args, **kwargs)
        if self._backward_hooks and self._is_full_backward_hook is False:
            self._attach_non_full_backward_hooks(args, out)
        with_kwargs = self._forward_hooks_with_kwargs
        for hid, hook in list(self._forward_hooks.items()):
            if state is not None:
                state[2].add(hid)
                state[3] = out
            r = hook(self, args, kwargs, out) if hid in with_kwargs else hook(self, args, out)
            if r is not None:
                out = r
        return out

    def _run_always_called(self, args, kwargs, called, out):
        """The ``always_call`` forward hooks not yet run when forward (or a hook) raised, as PyTorch runs them:
        with the output so far (None when forward raised), an exception of theirs only warned about."""
        for hid, hook in list(self._forward_hooks.items()):
            if hid not in self._forward_hooks_always_called or hid in called:
                continue
            try:
                r = hook(self, args, kwargs, out) if hid in self._forward_hooks_with_kwargs else hook(self, args, out)
                if r is not None:
                    out = r
            except Exception as e:  # noqa: BLE001 - the forward's own error is the one raised
                warnings.warn("module forward hook with ``always_call=True`` raised an exception that was silenced "
                              f"as another error was raised in forward: {e}", stacklevel=3)

    # ------------------------------------------------------------------ registration
    def _attach_non_full_backward_hooks(self, args, out):
        """The deprecated hooks of :meth:`register_backward_hook`: on the grad_fn of the first output tensor."""
        var = out
        while not isinstance(var, Tensor):
            if isinstance(var, dict):
                var = next(v for v in var.values() if isinstance(v, Tensor))
            else:
                var = var[0]
        grad_fn = var.grad_fn
        if grad_fn is None:
            return
        for hook in list(self._backward_hooks.values()):
            grad_fn.register_hook(LegacyHook(hook, self, grad_fn))
        _warn_non_full_backward_hook(args, out, grad_fn)

    def __setattr__(self, name: str, value) -> None:
        params = self.__dict__.get("_parameters")
        if isinstance(value, Buffer) and params is not None and not isinstance(value, Parameter):
            self._forget(name)
            self.register_buffer(name, value, getattr(value, "persistent", True))
        elif isinstance(value, Parameter):
            if params is None:
                raise AttributeError("cannot assign parameters before Module.__init__() call")
            self._forget(name)
            self.register_parameter(name, value)
        elif params is not None and name in params:
            if value is not None:
                raise TypeError(f"cannot assign '{_typename(value)}' as parameter '{name}' "
                                "(torch.nn.Parameter or None expected)")
            params[name] = None
        elif isinstance(value, Module):
            if params is None:
                raise AttributeError("cannot assign module before Module.__init__() call")
            if name not in self._modules:  # a replaced child keeps its place (and so its turn in forward)
                self._forget(name)
            self._modules[name] = value
        elif params is not None and name in self._modules:
            if value is not None:
                raise TypeError(f"cannot assign '{_typename(value)}' as child module '{name}' "
                                "(torch.nn.Module or None expected)")
            self._modules[name] = None
        elif params is not None and name in self._buffers:
            if value is not None and not isinstance(value, Tensor):
                raise TypeError(f"cannot assign '{_typename(value)}' as buffer '{name}' "
                                "(torch.Tensor or None expected)")
            self._buffers[name] = value
        else:
            _set(self, name, value)

    def _forget(self, name):
        self.__dict__.pop(name, None)
        for d in (self._parameters, self._buffers, self._modules):
            d.pop(name, None)
        self._non_persistent_buffers_set.discard(name)

    def __getattr__(self, name: str):
        d = self.__dict__
        for store in ("_parameters", "_buffers", "_modules"):
            s = d.get(store)
            if s is not None and name in s:
                return s[name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __delattr__(self, name: str) -> None:
        for d in (self._parameters, self._buffers, self._modules):
            if name in d:
                del d[name]
                self._non_persistent_buffers_set.discard(name)
                return
        object.__delattr__(self, name)

    def __dir__(self):
        return sorted(set(super().__dir__()) | set(self._parameters) | set(self._buffers) | set(self._modules))

    def _check_name(self, name, kind):
        if not isinstance(name, str):
            raise TypeError(f"{kind} name should be a string. Got {type(name).__name__}")
        if "_parameters" not in self.__dict__:
            raise AttributeError(f"cannot assign {kind} before Module.__init__() call")
        if name == "":
            raise KeyError(f'{kind} name can\'t be empty string ""')
        if "." in name:
            raise KeyError(f'{kind} name can\'t contain ".", got: {name}')

    def register_parameter(self, name: str, param: Parameter | None) -> None:
        """Add a parameter (or ``None``, a declared but absent one) under ``name``."""
        self._check_name(name, "parameter")
        if hasattr(self, name) and name not in self._parameters:
            raise KeyError(f"attribute '{name}' already exists")
        if param is not None and not isinstance(param, Parameter):
            raise TypeError(f"cannot assign '{_typename(param)}' object to parameter '{name}' "
                            "(torch.nn.Parameter or None required)")
        if param is not None and param.grad_fn is not None:
            raise ValueError(f"Cannot assign non-leaf Tensor to parameter '{name}'. Model parameters must be "
                             "created explicitly. To express '{name}' as a function of another Tensor, compute "
                             "the value in the forward() method.")
        self._parameters[name] = param

    def register_buffer(self, name: str, tensor: Tensor | None, persistent: bool = True) -> None:
        """Add a buffer: state saved in ``state_dict`` (when ``persistent``) but not trained.

        >>> import ember
        >>> m = ember.nn.Module()
        >>> m.register_buffer("running_mean", ember.zeros(3))
        >>> list(m.state_dict())
        ['running_mean']
        """
        self._check_name(name, "buffer")
        if name in self.__dict__ and isinstance(tensor, Buffer):
            del self.__dict__[name]
        if hasattr(self, name) and name not in self._buffers:
            raise KeyError(f"attribute '{name}' already exists")
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(f"cannot assign '{_typename(tensor)}' object to buffer '{name}' "
                            "(torch Tensor or None required)")
        self._buffers[name] = tensor
        if persistent:
            self._non_persistent_buffers_set.discard(name)
        else:
            self._non_persistent_buffers_set.add(name)

    def add_module(self, name: str, module: Module | None) -> None:
        """Add a child module under ``name`` (``Sequential().add_module("0", layer)``)."""
        if module is not None and not isinstance(module, Module):
            raise TypeError(f"{_typename(module)} is not a Module subclass")
        self._check_name(name, "module")
        if hasattr(self, name) and name not in self._modules:
            raise KeyError(f"attribute '{name}' already exists")
        self._modules[name] = module

    register_module = add_module

    def get_submodule(self, target: str) -> Module:
        """The submodule at dotted path ``target`` (``""`` is self)."""
        mod = self
        if target == "":
            return mod
        for item in target.split("."):
            if not hasattr(mod, item):
                raise AttributeError(f"{mod._get_name()} has no attribute `{item}`")
            mod = getattr(mod, item)
            if not isinstance(mod, Module):
                raise AttributeError(f"`{item}` is not an nn.Module")
        return mod

    def _get_leaf(self, target, store, kind):
        mod_path, _, name = target.rpartition(".")
        mod = self.get_submodule(mod_path)
        if not hasattr(mod, name):
            raise AttributeError(f"{mod._get_name()} has no attribute `{name}`")
        if name not in getattr(mod, store):
            raise AttributeError(f"`{name}` is not {kind}")
        return getattr(mod, name)

    def get_parameter(self, target: str) -> Parameter:
        """The parameter at dotted path ``target`` (``"net.0.weight"``)."""
        return self._get_leaf(target, "_parameters", "an nn.Parameter")

    def get_buffer(self, target: str) -> Tensor:
        """The buffer at dotted path ``target``."""
        return self._get_leaf(target, "_buffers", "a buffer")

    def set_submodule(self, target: str, module: Module, strict: bool = False) -> None:
        """Put ``module`` at dotted path ``target`` (its parent must exist; with ``strict``, so must the name).

        >>> import ember
        >>> net = ember.nn.Sequential(ember.nn.Linear(2, 2))
        >>> net.set_submodule("0", ember.nn.ReLU())
        >>> net
        Sequential(
          (0): ReLU()
        )
        """
        if target == "":
            raise ValueError("Cannot set the submodule without a target name!")
        atoms = target.split(".")
        if not isinstance(module, Module):
            raise ValueError(f"`module` is not an nn.Module, found {type(module)}")
        parent = self if len(atoms) == 1 else self.get_submodule(".".join(atoms[:-1]))
        if strict and not hasattr(parent, atoms[-1]):
            raise AttributeError(f"{parent._get_name()} has no attribute `{atoms[-1]}`")
        if hasattr(parent, atoms[-1]) and not isinstance(getattr(parent, atoms[-1]), Module):
            raise AttributeError(f"`{atoms[-1]}` is not an nn.Module")
        setattr(parent, atoms[-1], module)

    def get_extra_state(self):
        """The extra state a subclass saves in its ``state_dict`` (under ``_extra_state``) by overriding this and
        :meth:`set_extra_state`; the base class has none."""
        raise RuntimeError("Reached a code path in Module.get_extra_state() that should never be called. Please file "
                           "an issue at https://github.com/pytorch/pytorch/issues/new?template=bug-report.yml to "
                           "report this bug.")

    def set_extra_state(self, state) -> None:
        """Restore what :meth:`get_extra_state` returned (override both)."""
        raise RuntimeError("Reached a code path in Module.set_extra_state() that should never be called. Please file "
                           "an issue at https://github.com/pytorch/pytorch/issues/new?template=bug-report.yml to "
                           "report this bug.")

    # ------------------------------------------------------------------ traversal
    def named_modules(self, memo: set | None = None, prefix: str = "", remove_duplicate: bool = True):
        """``(dotted name, module)`` for this module and every descendant, each once."""
        if memo is None:
            memo = set()
        if self in memo and remove_duplicate:
            return
        if remove_duplicate:
            memo.add(self)
        yield prefix, self
        for name, m in self._modules.items():
            if m is None:
                continue
            yield from m.named_modules(memo, prefix + ("." if prefix else "") + name, remove_duplicate)

    def _named_members(self, store: str, prefix="", recurse=True, remove_duplicate=True, persistent_only=False):
        """The one traversal: ``(dotted name, value)`` of ``store`` entries over the module tree."""
        seen = set()
        mods = self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate) if recurse else [(prefix, self)]
        for mprefix, m in mods:
            skip = m._non_persistent_buffers_set if persistent_only else ()
            for k, v in getattr(m, store).items():
                if v is None or k in skip:
                    continue
                if remove_duplicate:
                    if id(v) in seen:
                        continue
                    seen.add(id(v))
                yield mprefix + ("." if mprefix else "") + k, v

    def named_parameters(self, prefix: str = "", recurse: bool = True, remove_duplicate: bool = True):
        """``(name, Parameter)`` pairs, shared parameters once."""
        return self._named_members("_parameters", prefix, recurse, remove_duplicate)

    def parameters(self, recurse: bool = True) -> Iterator[Parameter]:
        """The learnable parameters (for an optimizer).

        >>> import ember
        >>> [p.shape for p in ember.nn.Linear(2, 3).parameters()]
        [ember.Size([3, 2]), ember.Size([3])]
        """
        for _, p in self.named_parameters(recurse=recurse):
            yield p

    def named_buffers(self, prefix: str = "", recurse: bool = True, remove_duplicate: bool = True):
        return self._named_members("_buffers", prefix, recurse, remove_duplicate)

    def buffers(self, recurse: bool = True) -> Iterator[Tensor]:
        for _, b in self.named_buffers(recurse=recurse):
            yield b

    def named_children(self):
        seen = set()
        for name, m in self._modules.items():
            if m is not None and m not in seen:
                seen.add(m)
                yield name, m

    def children(self):
        for _, m in self.named_children():
            yield m

    def modules(self):
        for _, m in self.named_modules():
            yield m

    def apply(self, fn: Callable[[Module], None]) -> Module:
        """Call ``fn`` on every submodule (children first) and on self; returns self."""
        for m in self.children():
            m.apply(fn)
        fn(self)
        return self

    # ------------------------------------------------------------------ modes and grads
    def train(self, mode: bool = True) -> Module:
        if not isinstance(mode, bool):
            raise ValueError("training mode is expected to be boolean")
        for m in self.modules():
            _set(m, "training", mode)
        return self

    def eval(self) -> Module:
        return self.train(False)

    def requires_grad_(self, requires_grad: bool = True) -> Module:
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none: bool = True) -> None:
        for p in self.parameters():
            if p.grad is None:
                continue
            if set_to_none:
                p.grad = None
            else:
                g = p.grad
                if g.grad_fn is not None:
                    g.detach_()
                else:
                    g.requires_grad_(False)
                g.zero_()

    # ------------------------------------------------------------------ conversion
    def _apply(self, fn: Callable[[Tensor], Tensor], recurse: bool = True) -> Module:
        """Apply ``fn`` to every parameter (in place, through ``.data``), gradient and buffer; each child's own
        ``_apply`` is called first, so a Module that overrides it (to convert state of its own) takes part."""
        if recurse:
            for child in self.children():
                child._apply(fn)
        for p in self._parameters.values():
            if p is None:
                continue
            new = fn(p)
            if new is not p:
                p.data = new.detach()
            if p.grad is not None:
                g = fn(p.grad)
                if g is not p.grad:
                    p.grad = g
        for k, b in self._buffers.items():
            if b is not None:
                self._buffers[k] = fn(b)
        return self

    def _replicate_for_data_parallel(self) -> Module:
        """A shallow copy for one device of ``nn.DataParallel``: the same children and buffers (copied dicts) and
        no parameters of its own yet (the replication fills them); a Module overrides this to copy more."""
        replica = object.__new__(type(self))
        replica.__dict__ = self.__dict__.copy()
        replica.__dict__.update(_parameters=OrderedDict(), _buffers=self._buffers.copy(),
                                _modules=self._modules.copy(), _is_replica=True)
        return replica

    def to(self, *args, **kwargs) -> Module:
        """Move and/or cast parameters and buffers (floating ones only for a dtype), in place."""
        kwargs.pop("non_blocking", None)
        kwargs.pop("memory_format", None)
        dev, dt = _parse_to(args, kwargs)
        if dt is not None and not (dt.is_floating_point or dt.is_complex):
            raise TypeError(f"nn.Module.to only accepts floating point or complex dtypes, but got desired "
                            f"dtype={dt}")

        def convert(t):
            if dt is not None and (t.is_floating_point() or t.is_complex()):
                t = t.to(dt)
            return t.to(dev) if dev is not None else t

        return self._apply(convert)

    def to_empty(self, *, device, recurse: bool = True) -> Module:
        """Move parameters and buffers to ``device`` as new uninitialised storage of the same shapes and dtypes
        (then initialise them, e.g. with ``reset_parameters``): the way off the ``meta`` device."""
        return self._apply(lambda t: empty_like(t, device=device), recurse=recurse)

    def compile(self, *args, **kwargs) -> None:
        """Accepted for PyTorch compatibility: ember runs modules eagerly, so compiling changes nothing."""

    def cpu(self) -> Module:
        return self._apply(lambda t: t.cpu())

    def cuda(self, device=None) -> Module:
        return self._apply(lambda t: t.cuda(device))

    def type(self, dst_type) -> Module:
        return self._apply(lambda t: t.type(dst_type))

    def _cast_float(self, dt):
        return self._apply(lambda t: t.to(dt) if t.is_floating_point() else t)

    def float(self) -> Module:
        return self._cast_float(dtypes.float32)

    def double(self) -> Module:
        return self._cast_float(dtypes.float64)

    def half(self) -> Module:
        return self._cast_float(dtypes.float16)

    def bfloat16(self) -> Module:
        return self._cast_float(dtypes.bfloat16)

    def share_memory(self) -> Module:
        return self._apply(lambda t: t.share_memory_() if hasattr(t, "share_memory_") else t)

    # ------------------------------------------------------------------ state dict
    def state_dict(self, *args, destination=None, prefix: str = "", keep_vars: bool = False) -> OrderedDict:
        """Parameters and persistent buffers by dotted name, in PyTorch's order (own entries, then children).

        Values are detached (``keep_vars=False``) and share storage with the module.
        """
        if args:
            destination = args[0] if len(args) > 0 else destination
            prefix = args[1] if len(args) > 1 else prefix
            keep_vars = args[2] if len(args) > 2 else keep_vars
        if destination is None:
            destination = OrderedDict()
            destination._metadata = OrderedDict()  # each module's version, by prefix, for _load_from_state_dict
        return self._state_dict(destination, prefix, keep_vars, True)

    def _state_dict(self, destination, prefix, keep_vars, hooks):
        """Own entries, then each child's; with ``hooks``, the pre-hooks before and the post-hooks after (so a
        module's post-hook sees its children's entries), as PyTorch's recursion."""
        if hooks:
            for hook in self._state_dict_pre_hooks.values():
                hook(self, prefix, keep_vars)
        local_metadata = {"version": self._version}
        if hasattr(destination, "_metadata"):
            destination._metadata[prefix[:-1]] = local_metadata
        self._save_to_state_dict(destination, prefix, keep_vars)
        for name, m in self._modules.items():
            if m is not None:
                m._state_dict(destination, prefix + name + ".", keep_vars, hooks)
        if hooks:
            for hook in self._state_dict_hooks.values():
                r = hook(self, destination, prefix, local_metadata)
                if getattr(hook, "_from_public_api", False):
                    if r is not None:
                        raise RuntimeError("state_dict post-hook must return None")
                elif r is not None:
                    destination = r
        return destination

    def _save_to_state_dict(self, destination, prefix, keep_vars):
        for k, v in self._parameters.items():
            if v is not None:
                destination[prefix + k] = v if keep_vars else v.detach()
        for k, v in self._buffers.items():
            if v is not None and k not in self._non_persistent_buffers_set:
                destination[prefix + k] = v if keep_vars else v.detach()
        if type(self).get_extra_state is not Module.get_extra_state:
            destination[prefix + _EXTRA_STATE_KEY_SUFFIX] = self.get_extra_state()

    def load_state_dict(self, state_dict, strict: bool = True, assign: bool = False) -> _IncompatibleKeys:
        """Copy parameters and buffers from ``state_dict``; returns ``(missing_keys, unexpected_keys)``.

        As PyTorch: each module, parents before children, loads its own entries through
        :meth:`_load_from_state_dict` (which subclasses override to rename or convert old entries), after its
        load-state-dict pre-hooks; its post-hooks run once its children are loaded.  Entries that fit are copied
        even when others fail; then the errors (and, with ``strict``, missing and unexpected keys) raise together.

        >>> import ember
        >>> m = ember.nn.Linear(2, 1)
        >>> m.load_state_dict({"weight": ember.ones(1, 2), "bias": ember.zeros(1)})
        <All keys matched successfully>
        """
        if not hasattr(state_dict, "keys"):
            raise TypeError(f"Expected state_dict to be dict-like, got {type(state_dict)}.")
        missing, unexpected, errors = [], [], []
        metadata = getattr(state_dict, "_metadata", None)
        state_dict = OrderedDict(state_dict)
        if metadata is not None:
            state_dict._metadata = metadata

        def load(module, local, prefix=""):
            local_metadata = {} if metadata is None else dict(metadata.get(prefix[:-1], {}))
            if assign:
                local_metadata["assign_to_params_buffers"] = assign
            module._load_from_state_dict(local, prefix, local_metadata, True, missing, unexpected, errors)
            for name, child in module._modules.items():
                if child is not None:
                    child_prefix = prefix + name + "."
                    load(child, {k: v for k, v in local.items() if k.startswith(child_prefix)}, child_prefix)
            keys = _IncompatibleKeys(missing, unexpected)
            for hook in list(module._load_state_dict_post_hooks.values()):  # they may edit the key lists in place
                if hook(module, keys) is not None:
                    raise AssertionError("Hooks registered with ``register_load_state_dict_post_hook`` are not "
                                         "expected to return new values, if incompatible_keys need to be modified, "
                                         "it should be done inplace.")

        load(self, state_dict)
        if strict:
            _strict_errors(errors, missing, unexpected)
        if errors:
            raise RuntimeError("Error(s) in loading state_dict for {}:\n\t{}".format(self._get_name(),
                                                                                     "\n\t".join(errors)))
        return _IncompatibleKeys(missing, unexpected)

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                              error_msgs) -> None:
        """Load this module's own parameters and persistent buffers (not its children's) from the entries of
        ``state_dict`` under ``prefix``, after its load-state-dict pre-hooks; record what is missing, unexpected
        (with ``strict``) or wrong in the three lists.  Subclasses override it to adapt old checkpoints
        (``local_metadata["version"]`` is the version the entries were saved with)."""
        for hook in self._load_state_dict_pre_hooks.values():
            hook(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs)
        local = {k: v for k, v in self._parameters.items() if v is not None}
        local.update((k, v) for k, v in self._buffers.items()
                     if v is not None and k not in self._non_persistent_buffers_set)
        assign = local_metadata.get("assign_to_params_buffers", False)
        for name, dst in local.items():
            key = prefix + name
            if key not in state_dict:
                if strict:
                    missing_keys.append(key)
                continue
            src = state_dict[key]
            if not isinstance(src, Tensor):
                error_msgs.append(f'While copying the parameter named "{key}", expected torch.Tensor or Tensor-like '
                                  f"object from checkpoint but received {type(src)}")
                continue
            lazy = is_lazy(dst)
            if not lazy and dst.dim() == 0 and src.dim() == 1:  # PyTorch 0.3's one-element form of a scalar
                src = src[0]
            if not lazy and tuple(src.shape) != tuple(dst.shape):
                error_msgs.append(f"size mismatch for {key}: copying a param with shape {_size(src)} from checkpoint, "
                                  f"the shape in current model is {_size(dst)}.")
                continue
            try:
                with no_grad():
                    if not assign:
                        dst.copy_(src)
                    elif isinstance(dst, Parameter):
                        setattr(self, name, src.requires_grad_(dst.requires_grad) if isinstance(src, Parameter)
                                else Parameter(src, dst.requires_grad))
                    else:
                        setattr(self, name, src)
            except Exception as ex:  # noqa: BLE001 - reported with the others, as PyTorch does
                error_msgs.append(f'While copying the parameter named "{key}", whose dimensions in the model are '
                                  f"{dst.size()} and whose dimensions in the checkpoint are {src.size()}, an "
                                  f"exception occurred : {ex.args}.")
        extra = prefix + _EXTRA_STATE_KEY_SUFFIX
        if type(self).set_extra_state is not Module.set_extra_state:
            if extra in state_dict:
                self.set_extra_state(state_dict[extra])
            elif strict:
                missing_keys.append(extra)
        elif strict and extra in state_dict:
            unexpected_keys.append(extra)
        if strict:
            for key in state_dict:
                if key.startswith(prefix) and key != extra:
                    head, *rest = key[len(prefix):].split(".", 1)
                    if (rest and head not in self._modules) or (not rest and head not in local):
                        unexpected_keys.append(key)

    # ------------------------------------------------------------------ hooks
    def _hook(self, store, hook, prepend=False, flags=()) -> RemovableHandle:
        """Store ``hook`` in ``store`` under a new handle's id; ``flags``: ``(flag dict, set?)`` pairs that mark
        the id (``_forward_hooks_with_kwargs``, ...), each removed with the hook."""
        handle = RemovableHandle(store, extra_dict=[d for d, _ in flags] or None)
        store[handle.id] = hook
        for d, on in flags:
            if on:
                d[handle.id] = True
        if prepend:
            store.move_to_end(handle.id, last=False)
        return handle

    def register_forward_pre_hook(self, hook, *, prepend: bool = False, with_kwargs: bool = False) -> RemovableHandle:
        """``hook(module, args)`` runs before forward and may return new args; with ``with_kwargs``,
        ``hook(module, args, kwargs)`` may return new ``(args, kwargs)``.

        >>> import ember
        >>> m = ember.nn.Identity()
        >>> h = m.register_forward_pre_hook(lambda mod, args: (args[0] + 1,))
        >>> m(ember.zeros(1))
        tensor([1.])
        """
        return self._hook(self._forward_pre_hooks, hook, prepend, ((self._forward_pre_hooks_with_kwargs, with_kwargs),))

    def register_forward_hook(self, hook, *, prepend: bool = False, with_kwargs: bool = False,
                              always_call: bool = False) -> RemovableHandle:
        """``hook(module, args, output)`` (``hook(module, args, kwargs, output)`` with ``with_kwargs``) runs after
        forward; it may return a new output.  With ``always_call`` it runs even when forward raises."""
        return self._hook(self._forward_hooks, hook, prepend, ((self._forward_hooks_with_kwargs, with_kwargs),
                                                               (self._forward_hooks_always_called, always_call)))

    def register_full_backward_hook(self, hook, prepend: bool = False) -> RemovableHandle:
        """``hook(module, grad_input, grad_output)`` runs when the module's input gradients are computed."""
        if self._is_full_backward_hook is False:
            raise RuntimeError("Cannot use both regular backward hooks and full backward hooks on a single Module. "
                               "Please use only one of them.")
        _set(self, "_is_full_backward_hook", True)
        return self._hook(self._backward_hooks, hook, prepend)

    def register_backward_hook(self, hook) -> RemovableHandle:
        """Deprecated (use :meth:`register_full_backward_hook`): ``hook(module, grad_input, grad_output)`` runs on
        the backward of the last op of ``forward`` (the grad_fn of its first output), with that op's input and
        output gradients, which PyTorch documents as possibly not the module's."""
        if self._is_full_backward_hook is True:
            raise RuntimeError("Cannot use both regular backward hooks and full backward hooks on a single Module. "
                               "Please use only one of them.")
        _set(self, "_is_full_backward_hook", False)
        return self._hook(self._backward_hooks, hook)

    def register_full_backward_pre_hook(self, hook, prepend: bool = False) -> RemovableHandle:
        """``hook(module, grad_output)`` runs before the module's backward; it may return new grad_output."""
        return self._hook(self._backward_pre_hooks, hook, prepend)

    def register_state_dict_pre_hook(self, hook) -> RemovableHandle:
        """``hook(module, prefix, keep_vars)`` runs before each module's entries are saved."""
        return self._hook(self._state_dict_pre_hooks, hook)

    def register_state_dict_post_hook(self, hook) -> RemovableHandle:
        """``hook(module, state_dict, prefix, local_metadata)`` runs after each module's entries are saved; it
        must return None (edit ``state_dict`` in place)."""
        hook._from_public_api = True  # as PyTorch marks it: its result must be None (checked in state_dict)
        return self._hook(self._state_dict_hooks, hook)

    def _register_state_dict_hook(self, hook) -> RemovableHandle:
        """The private form: ``hook`` may return a new state dict."""
        return self._hook(self._state_dict_hooks, hook)

    def register_load_state_dict_pre_hook(self, hook) -> RemovableHandle:
        """``hook(module, state_dict, prefix, local_metadata, strict, missing, unexpected, error_msgs)``."""
        return self._register_load_state_dict_pre_hook(hook, with_module=True)

    def _register_load_state_dict_pre_hook(self, hook, with_module: bool = False) -> RemovableHandle:
        """The private form: ``hook(state_dict, prefix, ...)``, or with ``with_module`` the module first."""
        return self._hook(self._load_state_dict_pre_hooks, WrappedHook(hook, self if with_module else None))

    def register_load_state_dict_post_hook(self, hook) -> RemovableHandle:
        """``hook(module, incompatible_keys)`` runs after ``load_state_dict``."""
        return self._hook(self._load_state_dict_post_hooks, hook)

    # ------------------------------------------------------------------ repr
    def _get_name(self) -> str:
        return type(self).__name__

    def extra_repr(self) -> str:
        return ""

    def _changed(self, *settings) -> str:
        """``, name=value`` for each ``(name, default)`` of ``settings`` whose value differs from its default (the
        optional part of an ``extra_repr``, as PyTorch shows it)."""
        return "".join(f", {name}={getattr(self, name)!r}" for name, default in settings
                       if getattr(self, name) != default)

    def __repr__(self):
        lines = []
        extra = self.extra_repr()
        if extra:
            lines = extra.split("\n")
        for key, m in self._modules.items():
            lines.append("(" + key + "): " + _addindent(repr(m), 2))
        main = self._get_name() + "("
        if lines:
            if len(lines) == 1 and not self._modules:
                main += lines[0]
            else:
                main += "\n  " + "\n  ".join(lines) + "\n"
        return main + ")"

    def __setstate__(self, state):
        self.__dict__.update(state)
        for name in _HOOK_DICTS:  # a module pickled before a dict existed (or by an older PyTorch) gets it empty
            if name not in self.__dict__:
                _set(self, name, OrderedDict())
        if "_non_persistent_buffers_set" not in self.__dict__:
            _set(self, "_non_persistent_buffers_set", set())
        if "_is_full_backward_hook" not in self.__dict__:
            _set(self, "_is_full_backward_hook", None)

    def __getstate__(self):
        return self.__dict__.copy()


_HOOK_DICTS = ("_backward_pre_hooks", "_backward_hooks", "_forward_hooks", "_forward_hooks_with_kwargs",
               "_forward_hooks_always_called", "_forward_pre_hooks", "_forward_pre_hooks_with_kwargs",
               "_state_dict_hooks", "_state_dict_pre_hooks", "_load_state_dict_pre_hooks",
               "_load_state_dict_post_hooks")


def _strict_errors(errors, missing, unexpected):
    if unexpected:
        errors.insert(0, "Unexpected key(s) in state_dict: {}. ".format(", ".join(f'"{k}"' for k in unexpected)))
    if missing:
        errors.insert(0, "Missing key(s) in state_dict: {}. ".format(", ".join(f'"{k}"' for k in missing)))


def _warn_non_full_backward_hook(inputs, result, grad_fn):
    """PyTorch's FutureWarnings when a deprecated backward hook will not see the module's own gradients."""
    msg = None
    if not isinstance(result, Tensor) and not (isinstance(result, tuple)
                                               and all(isinstance(r, Tensor) for r in result)):
        msg = ("Using non-full backward hooks on a Module that does not return a single Tensor or a tuple of "
               "Tensors is deprecated and will be removed in future versions. This hook will be missing some of the "
               "grad_output. Please use register_full_backward_hook to get the documented behavior.")
    elif not all(isinstance(i, Tensor) for i in inputs):
        msg = ("Using non-full backward hooks on a Module that does not take as input a single Tensor or a tuple of "
               "Tensors is deprecated and will be removed in future versions. This hook will be missing some of the "
               "grad_input. Please use register_full_backward_hook to get the documented behavior.")
    else:
        result = (result,) if isinstance(result, Tensor) else result
        out_fns = {r.grad_fn for r in result if r.grad_fn is not None}
        if not out_fns or (len(out_fns) == 1 and grad_fn not in out_fns):
            msg = ("Using a non-full backward hook when outputs are nested in python data structure is deprecated "
                   "and will be removed in future versions. This hook will be missing some grad_output.")
        elif len(out_fns) > 1:
            msg = ("Using a non-full backward hook when outputs are generated by different autograd Nodes is "
                   "deprecated and will be removed in future versions. This hook will be missing some grad_output. "
                   "Please use register_full_backward_hook to get the documented behavior.")
        elif {i.grad_fn for i in inputs if i.grad_fn is not None} != {n[0] for n in grad_fn.next_functions}:
            msg = ("Using a non-full backward hook when the forward contains multiple autograd Nodes is deprecated "
                   "and will be removed in future versions. This hook will be missing some grad_input. Please use "
                   "register_full_backward_hook to get the documented behavior.")
    if msg is not None:
        warnings.warn(msg, FutureWarning, stacklevel=4)


def _typename(v):
    return v.type() if isinstance(v, Tensor) else type(v).__name__


def _size(t):
    return "torch.Size(" + str(list(t.shape)) + ")"

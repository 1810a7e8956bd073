"""``nn.utils.parametrize``: express a parameter or buffer as a function of other tensors.

``register_parametrization(module, "weight", P)`` moves ``module.weight`` to
``module.parametrizations.weight.original`` and swaps the module's class for a
generated subclass (``ParametrizedLinear``) whose ``weight`` is a property that
returns ``P(original)``; assigning to it calls ``P.right_inverse``. State-dict keys,
the class swap, ``deepcopy`` (allowed) and pickling (refused) follow PyTorch.

>>> import ember
>>> import ember.nn.utils.parametrize as P
>>> class Symmetric(ember.nn.Module):
...     def forward(self, X):
...         return X.triu() + X.triu(1).T
...     def right_inverse(self, A):
...         return A.triu()
>>> m = P.register_parametrization(ember.nn.Linear(3, 3), "weight", Symmetric())
>>> type(m).__name__, list(m.state_dict())
('ParametrizedLinear', ['bias', 'parametrizations.weight.original'])
>>> bool(ember.allclose(m.weight, m.weight.T))
True
"""
from __future__ import annotations

import copyreg
from collections.abc import Sequence
from contextlib import contextmanager
from copy import deepcopy

from ...autograd.grad_mode import no_grad
from ...tensor import Tensor
from ..modules.containers import ModuleDict, ModuleList
from ..modules.module import Module
from ..parameter import Parameter

__all__ = ["cached", "ParametrizationList", "register_parametrization", "is_parametrized",
           "remove_parametrizations", "type_before_parametrizations", "transfer_parametrizations_and_params"]

_cache_enabled = 0
_cache: dict = {}


@contextmanager
def cached():
    """Compute each parametrized tensor once inside the block and reuse it (a weight used several times).

    >>> import ember
    >>> import ember.nn.utils.parametrize as P
    >>> m = P.register_parametrization(ember.nn.Linear(2, 2), "weight", ember.nn.Tanh())
    >>> with P.cached():
    ...     m.weight is m.weight
    True
    """
    global _cache, _cache_enabled
    _cache_enabled += 1
    try:
        yield
    finally:
        _cache_enabled -= 1
        if not _cache_enabled:
            _cache = {}


def _register_parameter_or_buffer(module, name, X):
    if isinstance(X, Parameter):
        module.register_parameter(name, X)
    else:
        module.register_buffer(name, X)


def _set_data(dest: Tensor, src: Tensor) -> None:
    """``dest.set_(src)``: ``dest`` keeps its identity and now holds ``src``'s data (shape included)."""
    dest.data = src
    dest._bump()


def _check_same(what, got, expected, unparam, param, note=""):
    if got != expected:
        raise ValueError(f"Registering a parametrization may not change the {what} of the tensor, unless "
                         f"{note}`unsafe` flag is enabled.\n{unparam}: {expected}\n{param}: {got}")


class ParametrizationList(ModuleList):
    """The parametrizations of one tensor, in order, holding the unconstrained ``original`` tensor(s).

    It is ``module.parametrizations[tensor_name]``: ``original`` when the first ``right_inverse``
    returns one tensor (or is absent), ``original0``, ``original1``... when it returns several.
    Made by :func:`register_parametrization`, not by hand.
    """

    def __init__(self, modules: Sequence[Module], original: Tensor, unsafe: bool = False) -> None:
        if len(modules) == 0:
            raise ValueError("ParametrizationList requires one or more modules.")
        super().__init__(modules)
        self.unsafe = unsafe
        original_shape, original_dtype = original.shape, original.dtype
        with no_grad():
            new = original
            for module in reversed(list(self)):
                if hasattr(module, "right_inverse"):
                    try:
                        new = module.right_inverse(new)
                    except NotImplementedError:
                        pass
        if not isinstance(new, (Tensor, Sequence)):
            raise ValueError("'right_inverse' must return a Tensor or a Sequence of tensors (list, tuple...). "
                             f"Got {type(new).__name__}")
        self.is_tensor = isinstance(new, Tensor)
        self.ntensors = 1 if self.is_tensor else len(new)
        if self.is_tensor:
            if original.dtype != new.dtype:
                raise ValueError("When `right_inverse` outputs one tensor, it may not change the dtype.\n"
                                 f"original.dtype: {original.dtype}\nright_inverse(original).dtype: {new.dtype}")
            if original.device != new.device:
                raise ValueError("When `right_inverse` outputs one tensor, it may not change the device.\n"
                                 f"original.device: {original.device}\n"
                                 f"right_inverse(original).device: {new.device}")
            with no_grad():
                _set_data(original, new)
            _register_parameter_or_buffer(self, "original", original)
        else:
            for i, originali in enumerate(new):
                if not isinstance(originali, Tensor):
                    raise ValueError("'right_inverse' must return a Tensor or a Sequence of tensors "
                                     f"(list, tuple...). Got element {i} of the sequence with type "
                                     f"{type(originali).__name__}.")
                if isinstance(original, Parameter):
                    originali = Parameter(originali, original.requires_grad)
                originali.requires_grad_(original.requires_grad)
                _register_parameter_or_buffer(self, f"original{i}", originali)
        if not self.unsafe:
            Z = self()
            if not isinstance(Z, Tensor):
                raise ValueError(f"A parametrization must return a tensor. Got {type(Z).__name__}.")
            _check_same("dtype", Z.dtype, original_dtype, "unparametrized dtype", "parametrized dtype")
            _check_same("shape", Z.shape, original_shape, "unparametrized shape", "parametrized shape")

    def right_inverse(self, value: Tensor) -> None:
        """Run the ``right_inverse`` of each parametrization, last first, and store the result as the original(s)."""
        with no_grad():
            for module in reversed(list(self)):
                if not hasattr(module, "right_inverse"):
                    raise RuntimeError(f"parametrization {type(module).__name__} does not implement right_inverse.")
                value = module.right_inverse(value)
            if self.is_tensor:
                if not isinstance(value, Tensor):
                    raise ValueError(f"`right_inverse` should return a tensor. Got {type(value).__name__}")
                if value.dtype != self.original.dtype:
                    raise ValueError(f"The tensor returned by `right_inverse` has dtype {value.dtype} "
                                     f"while `original` has dtype {self.original.dtype}")
                _set_data(self.original, value)
                return
            if not isinstance(value, Sequence):
                raise ValueError(f"'right_inverse' must return a sequence of tensors. Got {type(value).__name__}.")
            if len(value) != self.ntensors:
                raise ValueError("'right_inverse' must return a sequence of tensors of length "
                                 f"{self.ntensors}. Got a sequence of length {len(value)}.")
            for i, tensor in enumerate(value):
                original_i = getattr(self, f"original{i}")
                if not isinstance(tensor, Tensor):
                    raise ValueError("'right_inverse' must return a sequence of tensors or reference-type "
                                     f"opaques. Got element {i} of type {type(tensor).__name__}.")
                if original_i.dtype != tensor.dtype:
                    raise ValueError(f"Tensor {i} returned by `right_inverse` has dtype {tensor.dtype} "
                                     f"while `original{i}` has dtype {original_i.dtype}")
                _set_data(original_i, tensor)

    def forward(self) -> Tensor:
        if self.is_tensor:
            x = self[0](self.original)
        else:
            x = self[0](*(getattr(self, f"original{i}") for i in range(self.ntensors)))
        for module in list(self)[1:]:
            x = module(x)
        return x


def _parametrized_deepcopy(self, memo):
    """``copy.deepcopy`` of a parametrized module: a plain copy of ``__dict__`` (pickling is refused)."""
    obj = memo.get(id(self))
    if obj is not None:
        return obj
    replica = self.__new__(self.__class__)
    memo[id(self)] = replica
    replica.__dict__ = deepcopy(self.__dict__, memo)
    for slot in copyreg._slotnames(self.__class__):
        if hasattr(self, slot):
            setattr(replica, slot, deepcopy(getattr(self, slot), memo))
    return replica


def _refuse_pickle(self):
    raise RuntimeError("Serialization of parametrized modules is only supported through state_dict(). See:\n"
                       "https://pytorch.org/tutorials/beginner/saving_loading_models.html"
                       "#saving-loading-a-general-checkpoint-for-inference-and-or-resuming-training")


def _inject_new_class(module: Module) -> None:
    """Swap the module's class for ``Parametrized<Class>``, a subclass that can hold the properties."""
    cls = module.__class__
    namespace = {"__getstate__": _refuse_pickle}
    if not hasattr(cls, "__deepcopy__"):
        namespace["__deepcopy__"] = _parametrized_deepcopy
    module.__class__ = type(f"Parametrized{cls.__name__}", (cls,), namespace)


def _inject_property(module: Module, tensor_name: str) -> None:
    """``module.<tensor_name>``: a property computing the parametrization (cached inside :func:`cached`)."""
    if hasattr(module, tensor_name):
        raise AssertionError(f"Module already has an attribute named '{tensor_name}'")

    def get_parametrized(self) -> Tensor:
        parametrization = self.parametrizations[tensor_name]
        if not _cache_enabled:
            return parametrization()
        key = (id(module), tensor_name)
        tensor = _cache.get(key)
        if tensor is None:
            tensor = _cache[key] = parametrization()
        return tensor

    def set_original(self, value: Tensor) -> None:
        self.parametrizations[tensor_name].right_inverse(value)

    setattr(module.__class__, tensor_name, property(get_parametrized, set_original))


def register_parametrization(module: Module, tensor_name: str, parametrization: Module, *,
                             unsafe: bool = False) -> Module:
    """Make ``module.<tensor_name>`` return ``parametrization(original)``; returns ``module``.

    The first registration on a tensor moves it to ``module.parametrizations[tensor_name].original``
    (initialised through ``parametrization.right_inverse`` when it has one; several tensors returned
    become ``original0``, ``original1``...). Later registrations stack: the newest applies last.
    Unless ``unsafe``, the parametrization may not change the tensor's dtype or shape.

    >>> import ember
    >>> import ember.nn.utils.parametrize as P
    >>> class RankOne(ember.nn.Module):
    ...     def forward(self, x, y):
    ...         return x.unsqueeze(-1) @ y.unsqueeze(-2)
    ...     def right_inverse(self, Z):
    ...         U, S, Vh = ember.linalg.svd(Z, full_matrices=False)
    ...         s0_sqrt = S[0].sqrt().unsqueeze(-1)
    ...         return U[..., :, 0] * s0_sqrt, Vh[..., 0, :] * s0_sqrt
    >>> m = P.register_parametrization(ember.nn.Linear(4, 4), "weight", RankOne())
    >>> ember.linalg.matrix_rank(m.weight).item()
    1
    >>> sorted(n for n, _ in m.named_parameters())
    ['bias', 'parametrizations.weight.original0', 'parametrizations.weight.original1']
    """
    parametrization.train(module.training)
    if is_parametrized(module, tensor_name):
        if not unsafe:
            Y = getattr(module, tensor_name)
            X = parametrization(Y)
            if not isinstance(X, Tensor):
                raise ValueError(f"A parametrization must return a tensor. Got {type(X).__name__}.")
            _check_same("dtype", X.dtype, Y.dtype, f"module.{tensor_name}.dtype",
                        f"parametrization(module.{tensor_name}).dtype", "the ")
            _check_same("shape", X.shape, Y.shape, f"module.{tensor_name}.shape",
                        f"parametrization(module.{tensor_name}).shape", "the ")
            if hasattr(parametrization, "right_inverse"):
                try:
                    Z = parametrization.right_inverse(X)
                except NotImplementedError:
                    pass
                else:
                    if not isinstance(Z, Tensor):
                        raise ValueError(f"parametrization.right_inverse must return a tensor. Got: "
                                         f"{type(Z).__name__}")
                    for what, got, expected in (("dtype", Z.dtype, Y.dtype), ("shape", Z.shape, Y.shape)):
                        if got != expected:
                            raise ValueError(f"The tensor returned by parametrization.right_inverse must have the "
                                             f"same {what} as module.{tensor_name}, unless the `unsafe` flag is "
                                             f"enabled.\nmodule.{tensor_name}.{what}: {expected}\n"
                                             f"returned {what}: {got}")
        plist = module.parametrizations[tensor_name]
        plist.append(parametrization)
        plist.unsafe |= unsafe
    elif tensor_name in module._buffers or tensor_name in module._parameters:
        original = getattr(module, tensor_name)
        plist = ParametrizationList([parametrization], original, unsafe=unsafe)
        delattr(module, tensor_name)
        if not is_parametrized(module):
            _inject_new_class(module)
            module.parametrizations = ModuleDict()
        _inject_property(module, tensor_name)
        module.parametrizations[tensor_name] = plist
    else:
        raise ValueError(f"Module '{module}' does not have a parameter, a buffer, or a parametrized element with "
                         f"name '{tensor_name}'")
    return module


def is_parametrized(module: Module, tensor_name: str | None = None) -> bool:
    """Whether ``module`` has a parametrization (on ``tensor_name``, or on any tensor when it is ``None``)."""
    parametrizations = getattr(module, "parametrizations", None)
    if not isinstance(parametrizations, ModuleDict):
        return False
    return len(parametrizations) > 0 if tensor_name is None else tensor_name in parametrizations


def remove_parametrizations(module: Module, tensor_name: str, leave_parametrized: bool = True) -> Module:
    """Undo :func:`register_parametrization` on ``tensor_name``; returns ``module``.

    With ``leave_parametrized`` the tensor keeps its current (parametrized) value, otherwise it goes
    back to ``original`` (impossible when the parametrization has several originals). The module
    gets its own class back once nothing is parametrized.

    >>> import ember
    >>> import ember.nn.utils.parametrize as P
    >>> m = P.register_parametrization(ember.nn.Linear(2, 2), "weight", ember.nn.Tanh())
    >>> w = m.weight.detach().clone()
    >>> m = P.remove_parametrizations(m, "weight")
    >>> type(m).__name__, bool(ember.equal(m.weight, w))
    ('Linear', True)
    """
    if not is_parametrized(module, tensor_name):
        raise ValueError(f"Module {module} does not have a parametrization on {tensor_name}")
    plist = module.parametrizations[tensor_name]
    if plist.is_tensor:
        original = plist.original
        if leave_parametrized:
            with no_grad():
                t = getattr(module, tensor_name)
                _set_data(original, t)
    elif leave_parametrized:
        t = getattr(module, tensor_name)
        original = Parameter(t) if t.requires_grad else t
    else:
        raise ValueError("Cannot leave unparametrized (`leave_parametrized=False`) a tensor that is parametrized "
                         "in terms of a sequence of tensors.")
    delattr(module.__class__, tensor_name)
    del module.parametrizations[tensor_name]
    _register_parameter_or_buffer(module, tensor_name, original)
    if not is_parametrized(module):
        delattr(module, "parametrizations")
        module.__class__ = module.__class__.__bases__[0]
    return module


def type_before_parametrizations(module: Module) -> type:
    """The module's class before any parametrization (its own class when it has none)."""
    return module.__class__.__bases__[0] if is_parametrized(module) else type(module)


def transfer_parametrizations_and_params(from_module: Module, to_module: Module,
                                         tensor_name: str | None = None) -> Module:
    """Register ``from_module``'s parametrizations (all, or those of ``tensor_name``) on ``to_module``,
    sharing their original tensors; returns ``to_module``."""
    if not is_parametrized(from_module):
        return to_module
    names = list(from_module.parametrizations) if tensor_name is None else [tensor_name]
    for name in names:
        if not hasattr(to_module, name):
            setattr(to_module, name, Parameter(getattr(from_module, name)))
        source = from_module.parametrizations[name]
        for param_func in source:
            register_parametrization(to_module, name, param_func)
        target = to_module.parametrizations[name]
        if hasattr(source, "original"):
            target.original = source.original
        else:
            i = 0
            while hasattr(source, f"original{i}"):
                setattr(target, f"original{i}", getattr(source, f"original{i}"))
                i += 1
    return to_module

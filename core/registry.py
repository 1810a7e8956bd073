"""The one registry of ops and the names they are exported under.

Every public op, built-in or from a plugin, is entered here with
:func:`export`: a function and the namespaces it belongs to (``torch`` for
``ember.*``, ``Tensor`` for methods, ``linalg``, ``nn.functional``,
``special``, ``fft``, or ``ops.<plugin namespace>``), its aliases and, where
asked, its in-place form ``name_``, derived here and nowhere else.  A module
that shows a namespace calls :func:`bind` once; later exports reach it too.

Every Op class is entered by name in ``OPS`` when it is defined, so the
policy layer can use an op it does not import (``dispatch.cast`` uses
``OPS["Cast"]``) and a saved graph names its ops as data.  Rows (:func:`unary_op`, :func:`binary_op`) generate the
Op class and the public function of an elementwise op from its kernel name,
what it saves and its vector-Jacobian product.

>>> import ember
>>> "sin_" in NAMESPACES["Tensor"] and NAMESPACES["torch"]["arcsin"] is NAMESPACES["torch"]["asin"]
True
"""
from __future__ import annotations

import inspect
import sys

from . import dtypes
from .arguments import numpy_names
from .autograd.function import Op
from .autograd.grad_mode import no_grad
from .dispatch import binary, cast, result_type, unary
from .interception import observed
from .writes import check_partial_overlap, copy_into_out, inplace, inplace_result
from .state import is_grad_enabled
from .tensor import Tensor

NAMESPACE_NAMES = ("torch", "Tensor", "linalg", "nn.functional", "special", "fft")

NAMESPACES: dict = {n: {} for n in NAMESPACE_NAMES}   # namespace -> {name: function}
_BOUND: dict = {}                                     # namespace -> objects showing it (modules, Tensor)
TORCH_TENSOR = ("torch", "Tensor")


def export(fn=None, name: str | None = None, *, to=TORCH_TENSOR, aliases=(), inplace: bool = False):
    """Show ``fn`` as ``name`` (and each alias) in every namespace of ``to``; returns ``fn``.

    With ``inplace``, the Tensor method ``name_`` (and ``alias_``) is derived
    from ``fn`` by :func:`inplace_form`.  Without ``fn``, a decorator.
    """
    if fn is None:
        return lambda f: export(f, name, to=to, aliases=aliases, inplace=inplace)
    name = name or fn.__name__
    fn = numpy_names(to, (name, *aliases), fn)
    for ns in to:
        for n in (name, *aliases):
            _set(ns, n, fn)
    if inplace:
        method = inplace_form(fn, name)
        for n in (name, *aliases):
            _set("Tensor", n + "_", method)
    return fn


def _set(ns, name, fn):
    NAMESPACES.setdefault(ns, {})[name] = fn
    shown = public(ns, name, fn)
    for target in _BOUND.get(ns, ()):
        setattr(target, name, shown)


def _as_is(ns, name, fn):
    return fn


# What an object bound to namespace ``ns`` shows as ``name``: ``fn`` itself until ember.overrides replaces this
# with ``fn`` behind its ``__torch_function__`` check (NAMESPACES always holds the functions themselves).
public = _as_is


def show_module(path: str, module) -> None:
    """Make ``module`` importable and readable under PyTorch's module ``path`` (``ember.autograd.functional``)
    when its code lives on a higher floor than that path's package."""
    parent, _, leaf = path.rpartition(".")
    sys.modules[path] = module
    setattr(sys.modules[parent], leaf, module)


def bind(ns: str, target) -> None:
    """Show every name of namespace ``ns`` on ``target`` (a module or a class), now and as they are added."""
    _BOUND.setdefault(ns, []).append(target)
    for name, fn in NAMESPACES.setdefault(ns, {}).items():
        setattr(target, name, public(ns, name, fn))


def bound(ns: str) -> tuple:
    """The objects showing namespace ``ns`` (empty when none does)."""
    return tuple(_BOUND.get(ns, ()))


def unexport(ns: str, name: str) -> None:
    """Take ``name`` out of namespace ``ns`` and the objects showing it."""
    NAMESPACES.get(ns, {}).pop(name, None)
    for target in _BOUND.get(ns, ()):
        if name in getattr(target, "__dict__", {}):
            delattr(target, name)


def drop(ns: str) -> None:
    """Forget namespace ``ns`` and the objects showing it (a plugin namespace whose last op went away)."""
    NAMESPACES.pop(ns, None)
    _BOUND.pop(ns, None)


_MISSING = object()
_NUMBER_OPERANDS = frozenset(("other", "exponent", "min", "max", "end", "values"))
# comparisons write a bool result, which casts into any self: their kernel's dtype check answers
_COMPARISONS = frozenset(("lt", "le", "gt", "ge", "eq", "ne", "less", "less_equal", "greater", "greater_equal",
                          "not_equal"))


def _operands(fn, args) -> list:
    """The arguments after ``fn``'s input that take part in its result type: tensors, and numbers given for an
    operand (``other``, ``exponent``, a bound: PyTorch's wrapped scalars), not for a number parameter such as
    elu's ``alpha`` or lerp's ``weight`` (an int ``elu_(x, 0.5)`` fails on the kernel's dtype, not on a cast)."""
    try:
        names = [None if p.kind is p.VAR_POSITIONAL else p.name for p in inspect.signature(fn).parameters.values()]
    except (TypeError, ValueError):
        names = []
    names = names[1:]
    return [a for i, a in enumerate(args) if isinstance(a, Tensor) or (isinstance(a, (int, float, complex)) and (
        i >= len(names) or names[i] is None or names[i] in _NUMBER_OPERANDS))]


def _aliased_input(op: str, kwargs: dict):
    """The written tensor of an in-place function given by keyword: ``input`` or one of its NumPy-style names."""
    for key in ("input", "x", "a", "x1"):
        if key in kwargs:
            return kwargs.pop(key)
    raise TypeError(f"{op}() missing 1 required positional argument: 'input'")


def inplace_form(fn, name: str):
    """``name_``: ``fn`` computed out of place, then written into ``input`` (history through the result).

    Under autograd it computes from a copy of ``input``: ``fn`` may save it
    for backward, and ``input`` is about to change.
    """
    op = getattr(fn, "op", None)

    def method(input=_MISSING, *args, **kwargs):  # noqa: A002 - PyTorch's name of the written tensor
        if input is _MISSING:  # the written tensor by a NumPy-style name (torch.relu_(x=t)), as PyTorch takes it
            input = _aliased_input(name + "_", kwargs)
        for x in (*args, *kwargs.values()):
            if isinstance(x, Tensor):
                check_partial_overlap(input, x)
        if op is not None and not kwargs and _direct(input, args):
            return inplace(op, input, *args)  # the one Op, written into input (recorded where autograd wants it)

        def compute(x):
            try:
                r = fn(x, *args, **kwargs)
            except NotImplementedError:  # PyTorch checks the result's cast into input before the kernel's dtypes
                if name not in _COMPARISONS:
                    dtypes.check_out_cast(name + "_", result_type(input, *_operands(fn, args)), input.dtype)
                raise
            dtypes.check_out_cast(name + "_", r.dtype, input.dtype)
            if r.shape != input.shape:  # an operand that broadcasts input to a larger shape
                raise RuntimeError(f"{name}_: output with shape {list(input.shape)} doesn't match the broadcast shape "
                                   f"{list(r.shape)}")
            return r

        # an operand that needs a gradient may make fn save input too (``a.igamma_(x)`` saves ``a``)
        return inplace_result(input, compute, name + "_", any(isinstance(a, Tensor) and a._rg for a in args))

    method.__name__ = method.__qualname__ = name + "_"
    method.__doc__ = f"In-place :func:`{name}`; returns self."
    return method


def _direct(a, args) -> bool:
    """Whether the in-place form of a row op may run as its one Op writing into floating ``a`` (through
    :func:`ember.dispatch.inplace`, which writes with the kernel itself where the backend's kernel takes ``out=``):
    nothing intercepts, any tensor operand has ``a``'s dtype (the out-of-place result then has it too, so the
    write is exactly the result), and ``a`` is not a view of which a graph is recorded (that history is rewritten
    through the composed form)."""
    if not a.dtype.is_floating_point or observed():
        return False
    recorded = a._rg
    for x in args:
        if isinstance(x, Tensor):
            if x.dtype is not a.dtype:
                return False
            recorded = recorded or x._rg
    return a._base is None or not recorded or not is_grad_enabled()


# --------------------------------------------------------------------------- rows
def op_class(name: str, kernel: str | None = None, *, saves: str = "none", vjp=None, backward_name=None,
             base=Op, arity: int | None = None, params: tuple = (), nondiff_outputs: tuple = (),
             tags=None, promotion: str | None = None, onnx: str | None = None, autocast: dict | None = None,
             save_for: tuple | None = None, saved_names: tuple | None = None) -> type:
    """An Op whose forward is ``k[kernel](*arrays, *params)`` and whose backward is ``vjp``.

    ``saves`` is "input", "output", "both" or "none"; ``vjp(ctx, g)`` returns
    one gradient per input and reads ``ctx.inputs`` / ``ctx.output``; ``save_for`` keeps an input only
    for the gradients that read it (:class:`ember.autograd.function.Op`); ``saved_names`` are PyTorch's
    names of the saved inputs (``grad_fn._saved_<name>``).
    Without ``vjp`` the op is not differentiable (its outputs carry none).
    ``arity``, where known, is the number of arguments forward takes.
    ``params`` names the trailing forward arguments that the forward keeps on
    ``ctx`` for ``vjp`` (``params=("lo", "hi")``: ``ctx.lo``, ``ctx.hi``); the
    arguments before them are the arrays, one unless ``arity`` says how many
    arguments there are in all.  ``nondiff_outputs``: the indices of outputs
    that carry no gradient.  A capitalised ``name`` (a class name, "Hardtanh")
    is the grad_fn's name with ``Backward0`` added; a lower-case one is title-cased.
    ``tags``, ``promotion``, ``onnx`` and ``autocast`` are the op's facts that vmap, dispatch, the ONNX
    exporter and autocast read (see :class:`ember.autograd.function.Op`); unset, the base's hold.
    """
    kernel = kernel or name
    if params or arity is not None:
        # spelled out in source (``ctx.lo = lo; return k["clamp"](x, lo, hi)``): the same code as a
        # hand-written forward, no argument packing and no extra call on the hot path
        n = arity if arity is not None else 1 + len(params)
        if n < len(params) or not all(p.isidentifier() for p in params):
            raise ValueError(f"op_class {name!r}: bad params {params!r} for arity {n}")
        args = ", ".join([f"a{i}" for i in range(n - len(params))] + list(params))
        src = f"def forward(ctx, k, {args}):\n"
        src += "".join(f"    ctx.{p} = {p}\n" for p in params)
        src += f"    return k[{kernel!r}]({args})\n"
        ns = {}
        exec(compile(src, f"<op_class {name}>", "exec"), ns)  # noqa: S102 - source from identifiers checked above
        forward = ns["forward"]
    else:
        def forward(ctx, k, *args):
            return k[kernel](*args)

    if backward_name is None:
        backward_name = (name if name[:1].isupper() else name.title().replace("_", "")) + "Backward0"
    attrs = {"op_name": name, "forward": staticmethod(forward), "save_inputs": saves in ("input", "both"),
             "save_output": saves in ("output", "both"), "backward_name": backward_name}
    if not params:
        attrs["kernel_name"] = kernel  # the forward is the kernel itself (an in-place form may write through it)
    if nondiff_outputs:
        attrs["nondiff_outputs"] = tuple(nondiff_outputs)
    facts = {"tags": tags, "promotion": promotion, "onnx": onnx, "autocast": autocast, "save_for": save_for,
             "saved_names": saved_names}
    attrs.update({k: v for k, v in facts.items() if v is not None})
    if promotion is not None and promotion not in dtypes.PROMOTION_KINDS:
        raise ValueError(f"op_class {name!r}: unknown promotion kind {promotion!r} "
                         f"(known: {list(dtypes.PROMOTION_KINDS)})")
    if vjp is not None:
        attrs["backward"] = staticmethod(vjp)
    return type(backward_name, (base,), attrs)


_type_name = dtypes.type_name


_F32, _F64 = dtypes.float32.np, dtypes.float64.np  # NumPy's dtype objects of native order are singletons


def check_tensor(x, op: str):
    """PyTorch's TypeError for a non-Tensor ``input``."""
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}(): argument 'input' must be Tensor, not {type(x).__name__}")
    return x


def unary_op(name: str, vjp=None, *, saves: str = "input", kernel=None, promotion: str = "int_to_float",
             integer=None, check=None, backward=None, aliases=(), inplace: bool = True, to=TORCH_TENSOR,
             doc: str | None = None, out: bool = True, tags=("pointwise",), onnx: str | None = None,
             autocast: dict | None = None, kernel_dtypes: tuple | None = None, backward_name: str | None = None):
    """A one-tensor elementwise op from its row; returns ``(Op, function)``.

    ``vjp(g, x, y)`` gets the gradient, the saved input ``x`` and the saved
    output ``y``.  ``promotion`` is the op's promotion kind (:data:`ember.dtypes.PROMOTION_KINDS`):
    by default ("int_to_float") an integer or bool input computes in the
    default float dtype; "default" computes in the input's dtype whatever it
    is.  ``integer(x)``, where given, is the result for an integer or bool input
    itself (``lambda x: x.clone()`` for rounding, of promotion kind "keep").
    ``check(input)`` may refuse an input; ``backward(ctx, g)`` replaces ``vjp``
    where the gradient needs more than the saved tensors.  ``out=False``: the
    function takes no ``out=`` (as ``torch.relu``).  ``tags``, ``onnx`` and
    ``autocast`` are declared on the Op (:func:`op_class`).  ``kernel_dtypes``: ``(kernel, supported)``, PyTorch's
    kernel and the input dtypes it computes (:func:`ember.dtypes.check_kernel`); another raises its
    NotImplementedError before anything is computed.  ``backward_name``: PyTorch's name of the node where it is
    not the op's (``square`` leaves ``PowBackward0``).
    """
    if kernel_dtypes is not None:
        check = _kernel_check(kernel_dtypes, check)
    if vjp is not None:
        def backward(ctx, g):
            return vjp(g, ctx.inputs[0] if saves == "input" else None, ctx.output if saves == "output" else None)
    Cls = op_class(name, kernel, saves=saves, vjp=backward, arity=1, tags=tags, promotion=promotion, onnx=onnx,
                   autocast=autocast, backward_name=backward_name)
    to_float = promotion == "int_to_float"

    if integer is None and not to_float and check is None and not out:
        def fn(input):  # noqa: A002
            if type(input) is not Tensor:
                check_tensor(input, name)
            return unary(Cls, input)
    elif integer is None and not to_float and check is None:
        def fn(input, *, out=None):  # noqa: A002
            if type(input) is not Tensor:
                check_tensor(input, name)
            if out is None:
                return unary(Cls, input)
            return copy_into_out(out, unary(Cls, input))
    elif integer is None and not to_float:
        def fn(input, *, out=None):  # noqa: A002
            if type(input) is not Tensor:
                check_tensor(input, name)
            check(input)
            r = unary(Cls, input)
            return r if out is None else copy_into_out(out, r)
    else:
        def fn(input, *, out=None):  # noqa: A002
            if check is None and type(input) is Tensor and ((d := input._data.dtype) is _F32 or d is _F64):
                r = unary(Cls, input)  # a plain float32/float64 tensor: nothing to check or cast
                return r if out is None else copy_into_out(out, r)
            check_tensor(input, name)
            if check is not None:
                check(input)
            if input.dtype.category < dtypes.FLOAT:
                if integer is not None:  # the integer form is the result
                    r = integer(input)
                    return r if out is None else copy_into_out(out, r)
                input = cast(input, dtypes.computation_dtype(promotion, input.dtype))
            r = unary(Cls, input)
            return r if out is None else copy_into_out(out, r)

    if vjp is None and backward is None:  # not differentiable: its results carry no gradient (as binary_op's)
        differentiable = fn

        def fn(*args, **kwargs):
            with no_grad():
                return differentiable(*args, **kwargs)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = doc or f"Elementwise ``{name}`` (differentiable; integers compute in the default float dtype)."
    if check is None:
        fn.op = Cls  # on floating input, fn is exactly Cls (its in-place form may write through the kernel)
    fn = export(fn, name, to=to, aliases=aliases, inplace=inplace)
    return Cls, fn


def _kernel_check(kernel_dtypes, check):
    """``check`` preceded by the refusal of a dtype PyTorch's kernel has no code for."""
    kernel, supported = kernel_dtypes

    def checked(input):  # noqa: A002
        dtypes.check_kernel(kernel, input, supported, empty_ok=False)  # (elementwise: empty input too)
        if check is not None:
            check(input)
    return checked


def binary_result(r, a, b, op):
    """``r``, or PyTorch's TypeError when :func:`binary` found no tensor operand."""
    if r is NotImplemented:
        raise TypeError(f"{op}(): unsupported operand types {type(a).__name__} and {type(b).__name__}")
    return r


def binary_op(name: str, vjp=None, *, saves: str = "input", kernel=None, check=None, aliases=(),
              inplace: bool = True, to=TORCH_TENSOR, doc: str | None = None, backward_name=None,
              promotion: str = "default", tags=("pointwise",), onnx: str | None = None, autocast: dict | None = None):
    """A two-operand elementwise op (broadcasting, PyTorch's promotion) from its row; returns ``(Op, function)``.

    ``vjp(ctx, g)`` returns the two gradients; without one the result carries
    no gradient (comparisons, bitwise ops).  ``check(input, other)`` may
    refuse operands before anything is computed.  ``promotion``, ``tags``,
    ``onnx`` and ``autocast`` are declared on the Op (:func:`op_class`).
    """
    if promotion not in ("default", "always_bool"):  # (the generated function applies no other kind)
        raise ValueError(f"binary_op {name!r}: promotion kind {promotion!r} needs its own function; declare the "
                         f"Op with op_class")
    Cls = op_class(name, kernel, saves=saves, vjp=vjp, backward_name=backward_name, arity=2, tags=tags,
                   promotion=promotion, onnx=onnx, autocast=autocast)

    def fn(input, other, *, out=None):  # noqa: A002
        if check is not None:
            check(input, other)
        if vjp is None:
            with no_grad():
                r = binary(Cls, input, other)
        else:
            r = binary(Cls, input, other)
        r = binary_result(r, input, other, name)
        return r if out is None else copy_into_out(out, r)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = doc or f"Elementwise ``{name}`` with broadcasting and type promotion."
    if check is None:
        fn.op = Cls
    fn = export(fn, name, to=to, aliases=aliases, inplace=inplace)
    return Cls, fn

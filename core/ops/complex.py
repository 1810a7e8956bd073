"""Complex numbers: parts, views between complex numbers and real pairs, conjugation, polar form.

Gradients follow PyTorch's convention: for a real loss ``L`` of a complex
``z``, ``z.grad`` is ``dL/dRe(z) + i dL/dIm(z)`` (twice the conjugate
Wirtinger derivative), so the vjp of a holomorphic ``f`` is ``g * conj(f'(z))``
and that of a linear map is its adjoint.  ember has no lazy conjugate or
negative bit: :func:`conj` computes the conjugate (``is_conj`` is always
False and ``resolve_conj`` returns its input).

>>> import ember
>>> z = ember.tensor([3 + 4j])
>>> z.real, z.abs(), ember.view_as_real(z)
(tensor([3.]), tensor([5.]), tensor([[3., 4.]]))
"""
from __future__ import annotations

from .. import dtypes
from ..autograd.function import Op
from ..dispatch import apply, broadcast_error, cast, same_device, unary, view_op
from ..writes import out_or
from ..registry import NAMESPACES, _type_name, check_tensor, export, op_class
from ..tensor import Tensor
from .creation import create as _create
from .pointwise import _no_slope, sgn, where
from .shape import _copy_of

TORCH, TENSOR = ("torch",), ("Tensor",)


def _complex_of(t, op):
    if t.dtype.category != dtypes.COMPLEX:
        raise RuntimeError(f"{op} is not implemented for tensors with non-complex dtypes.")


# --------------------------------------------------------------------------- parts (views)
@export(to=TORCH)
def real(input):  # noqa: A002
    """The real part: a view of a complex tensor (``input`` itself when it is real).

    >>> import ember
    >>> ember.real(ember.tensor([1 + 2j]))
    tensor([1.])
    """
    check_tensor(input, "real")
    # PyTorch's view: the first of the real pairs (its node SelectBackward0, dim -1 and index 0 saved)
    return view_as_real(input).select(-1, 0) if input.dtype.category == dtypes.COMPLEX else input


@export(to=TORCH)
def imag(input):  # noqa: A002
    """The imaginary part: a view of a complex tensor (real tensors have none).

    >>> import ember
    >>> ember.imag(ember.tensor([1 + 2j]))
    tensor([2.])
    """
    check_tensor(input, "imag")
    _complex_of(input, "imag")
    return view_as_real(input).select(-1, 1)


def _set_real(self, value):
    real(self).copy_(value)


def _set_imag(self, value):
    imag(self).copy_(value)


export(property(real, _set_real, doc="The real part (a view); assigning to it writes the tensor."), "real", to=TENSOR)
export(property(imag, _set_imag, doc="The imaginary part (a view); assigning to it writes the tensor."), "imag",
       to=TENSOR)


class ViewAsReal(Op):
    """``(..., 2)`` real pairs sharing the storage of a complex tensor."""

    @staticmethod
    def forward(ctx, k, x):
        return k["view_as_real"](x)

    @staticmethod
    def backward(ctx, g):
        return view_as_complex(g.contiguous())


class ViewAsComplex(Op):
    """A complex tensor sharing the storage of ``(..., 2)`` real pairs."""

    @staticmethod
    def forward(ctx, k, x):
        return k["view_as_complex"](x)

    @staticmethod
    def backward(ctx, g):
        return view_as_real(g)


@export(to=TORCH)
def view_as_real(input):  # noqa: A002
    """The complex tensor as real pairs: a view with a last dimension of size 2.

    >>> import ember
    >>> ember.view_as_real(ember.tensor([1 + 2j, 3j]))
    tensor([[1., 2.],
            [0., 3.]])
    """
    check_tensor(input, "view_as_real")
    if input.dtype.category != dtypes.COMPLEX:
        raise RuntimeError("view_as_real is only supported for complex tensors")
    return view_op(ViewAsReal, input)


@export(to=TORCH)
def view_as_complex(input):  # noqa: A002
    """Real pairs (a last dimension of size 2, stride 1) as a complex tensor sharing their storage.

    >>> import ember
    >>> ember.view_as_complex(ember.tensor([[1.0, 2.0]]))
    tensor([1.+2.j])
    """
    check_tensor(input, "view_as_complex")
    if input.dtype not in (dtypes.float32, dtypes.float64):
        raise RuntimeError(f"view_as_complex is only supported for float and double tensors, but got a tensor of "
                           f"scalar type: {_type_name(input.dtype)}")
    if input.dim() == 0 or input.shape[-1] != 2:
        raise RuntimeError(f"Tensor must have a last dimension of size 2 (got shape {list(input.shape)})")
    strides = input.stride()
    empty = not input.numel()  # (NumPy gives an empty array strides of 0; PyTorch's empty tensors pass the checks)
    if strides[-1] != 1 and not empty:
        raise RuntimeError(f"Tensor must have a last dimension with stride 1 (got strides {list(strides)})")
    if (any(s % 2 for s in strides[:-1]) or input.storage_offset() % 2) and not empty:
        raise RuntimeError("Tensor must have a stride divisible by 2 for all but last dimension and a storage "
                           "offset divisible by 2")
    return view_op(ViewAsComplex, input)


view_as_real_copy = _copy_of(view_as_real, "view_as_real_copy", TORCH)
view_as_complex_copy = _copy_of(view_as_complex, "view_as_complex_copy", TORCH)


# --------------------------------------------------------------------------- building complex numbers
class Complex(Op):
    """``real + i imag`` from two real tensors (broadcast); the gradients are the parts of ``g``. As PyTorch's node,
    it keeps each part whose gradient is needed (a later in-place change of it refuses the backward)."""

    save_inputs = True
    save_for = ((0,), (1,), None)
    saved_names = ("real", "imag")

    @staticmethod
    def forward(ctx, k, re, im, shape):
        return k["make_complex"](re, im, shape)

    @staticmethod
    def backward(ctx, g):
        ctx.check_saved()
        return real(g), imag(g)


def _float_pair(name, a, b):
    for arg, v, pos in (("real" if name == "complex" else "abs", a, 1), ("imag" if name == "complex" else "angle",
                                                                          b, 2)):
        if not isinstance(v, Tensor):
            raise TypeError(f"{name}(): argument '{arg}' (position {pos}) must be Tensor, not {type(v).__name__}")
    ok = (dtypes.float32, dtypes.float64)
    if a.dtype is dtypes.float16 and b.dtype is dtypes.float16:
        raise NotImplementedError(f"{name}: float16 parts would make a complex32 (ComplexHalf) tensor, a dtype "
                                  f"ember does not have; use float32 or float64 parts")
    if a.dtype not in ok or b.dtype not in ok:
        raise RuntimeError(f"{name}: Expected both inputs to be Half, Float or Double tensors but got "
                           f"{_type_name(a.dtype)} and {_type_name(b.dtype)}")
    if a.dtype is not b.dtype:
        raise RuntimeError(f"{name}: Expected object of scalar type {_type_name(a.dtype)} but got scalar type "
                           f"{_type_name(b.dtype)} for second argument")
    err = broadcast_error([tuple(a.shape), tuple(b.shape)])
    if err:
        raise RuntimeError(f"{name}: {err}")
    same_device(name, (a, b))


@export(to=TORCH)
def complex(real, imag, *, out=None):  # noqa: A001 - PyTorch's name
    """The complex tensor ``real + i imag`` (two float or two double tensors, broadcast).

    >>> import ember
    >>> ember.complex(ember.tensor([1.0]), ember.tensor([-2.0]))
    tensor([1.-2.j])
    """
    _float_pair("complex", real, imag)
    return out_or(apply(Complex, real, imag, _broadcast(real.shape, imag.shape)), out)


def _broadcast(a, b):
    n = max(len(a), len(b))
    a, b = (1,) * (n - len(a)) + tuple(a), (1,) * (n - len(b)) + tuple(b)
    return tuple(y if x == 1 else x for x, y in zip(a, b))


@export(to=TORCH)
def polar(abs, angle, *, out=None):  # noqa: A002 - PyTorch's names
    """The complex tensor ``abs * (cos(angle) + i sin(angle))``.

    >>> import ember
    >>> ember.polar(ember.tensor([2.0]), ember.tensor([0.0]))
    tensor([2.+0.j])
    """
    _float_pair("polar", abs, angle)
    return out_or(apply(Polar, abs, angle, _broadcast(abs.shape, angle.shape)), out)


class Polar(Op):
    """``abs * (cos(angle) + i sin(angle))``; as PyTorch's node it keeps only its result, which both gradients
    read (PyTorch's formula: ``Re(conj(g) sgn(z))`` for ``abs``, ``Re(conj(g) i z)`` for ``angle``)."""

    save_output = True

    @staticmethod
    def forward(ctx, k, r, theta, shape):
        return k["make_complex"](k["mul"](r, k["cos"](theta)), k["mul"](r, k["sin"](theta)), shape)

    @staticmethod
    def backward(ctx, g):
        z, nf = ctx.output, ctx._next
        gc = g.conj()
        return (real(gc * sgn(z)) if nf[0] is not None else None,
                real(gc * z * 1j) if nf[1] is not None else None)


# --------------------------------------------------------------------------- angle and conjugation
def _angle_vjp(ctx, g):
    (z,) = ctx.inputs
    return where(z == 0, g.new_zeros(()), g * z / (z * z.conj()).real * 1j)


Angle = op_class("Angle", "complex_angle", saves="input", vjp=_angle_vjp, tags=("pointwise",))
def _real_angle_vjp(ctx, g):
    ctx.check_saved()
    return _no_slope(g)


RealAngle = op_class("RealAngle", "real_angle", saves="input", saved_names=("self", None), vjp=_real_angle_vjp,
                     backward_name="AngleBackward0", params=("pi",), tags=("pointwise",))  # (keeps self, as PyTorch)


@export
def angle(input, *, out=None):  # noqa: A002
    """The argument of each element, in radians (0 or pi for real numbers; integers give the default float dtype).

    >>> import ember
    >>> ember.angle(ember.tensor([1j, -1.0]))
    tensor([1.5708, 3.1416])
    """
    check_tensor(input, "angle")
    if input.dtype.category == dtypes.COMPLEX:
        return out_or(unary(Angle, input), out)
    if input.dtype.category < dtypes.FLOAT:
        input = cast(input, dtypes.get_default_dtype())
    return out_or(unary(RealAngle, input, 3.141592653589793), out)


def _conj_vjp(ctx, g):
    return conj_physical(g)


Conj = op_class("Conj", "complex_conj", vjp=_conj_vjp, backward_name="ConjPhysicalBackward0", tags=("pointwise",))


@export
def conj_physical(input, *, out=None):  # noqa: A002
    """The complex conjugate, computed (``input`` itself when it is real).

    >>> import ember
    >>> ember.conj_physical(ember.tensor([1 + 2j]))
    tensor([1.-2.j])
    """
    check_tensor(input, "conj_physical")
    r = unary(Conj, input) if input.dtype.category == dtypes.COMPLEX else input
    return out_or(r, out)


export(conj_physical, inplace=True, to=())  # Tensor.conj_physical_
export(NAMESPACES["Tensor"]["conj_physical_"], "conj_physical_", to=TORCH)


@export
def conj(input):  # noqa: A002
    """The complex conjugate (``input`` itself when it is real).  PyTorch defers the conjugation with a flag on a
    view; ember computes it, so the result never shares memory with a complex ``input``.

    >>> import ember
    >>> ember.tensor([1 + 2j]).conj()
    tensor([1.-2.j])
    """
    return conj_physical(input)


@export
def resolve_conj(input):  # noqa: A002
    """``input``: ember never defers a conjugation (see :func:`conj`)."""
    return check_tensor(input, "resolve_conj")


@export
def resolve_neg(input):  # noqa: A002
    """``input``: ember never defers a negation."""
    return check_tensor(input, "resolve_neg")


@export
def is_conj(input) -> bool:  # noqa: A002
    """False: ember never defers a conjugation (see :func:`conj`)."""
    check_tensor(input, "is_conj")
    return False


@export
def is_neg(input) -> bool:  # noqa: A002
    """False: ember never defers a negation."""
    check_tensor(input, "is_neg")
    return False


@export(to=TORCH)
def is_complex(input) -> bool:  # noqa: A002
    """Whether ``input`` has a complex dtype."""
    return check_tensor(input, "is_complex").dtype.category == dtypes.COMPLEX


@export
def isreal(input):  # noqa: A002
    """Elementwise: whether the imaginary part is zero (always True for real tensors).

    >>> import ember
    >>> ember.isreal(ember.tensor([1 + 0j, 1j]))
    tensor([ True, False])
    """
    check_tensor(input, "isreal")
    if input.dtype.category == dtypes.COMPLEX:
        return imag(input) == 0
    return _create("isreal", input._dev, False, None, "full", tuple(input.shape), True,
                   input._dev.backend.array_dtype(dtypes.bool))


# --------------------------------------------------------------------------- conjugate transposes
@export(to=TENSOR)
def adjoint(input):  # noqa: A002
    """The conjugate transpose of the last two dimensions."""
    if input.dim() < 2:
        raise RuntimeError(f"tensor.adjoint() is only supported on matrices or batches of matrices. Got "
                           f"{input.dim()}-D tensor.")
    return conj(input.transpose(-2, -1))


export(adjoint, to=TORCH)


def _mH(self):
    if self.dim() < 2:
        raise RuntimeError(f"tensor.mH is only supported on matrices or batches of matrices. Got {self.dim()}-D "
                           f"tensor.")
    return conj(self.transpose(-2, -1))


export(property(_mH, doc="The conjugate transpose of the last two dimensions."), "mH", to=TENSOR)


@export(to=TENSOR)
def chalf(self, memory_format=None):
    """complex32 (ComplexHalf) is not supported: no array library here computes in it."""
    raise RuntimeError(f"chalf: ember has no complex32 (ComplexHalf) tensors (got a {self.dtype} tensor of shape "
                       f"{list(self.shape)}); use cfloat() for complex64")

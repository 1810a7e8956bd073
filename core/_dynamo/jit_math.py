"""float32 ``exp``, ``tanh``, ``sigmoid`` and ``erf`` for the numba kernels of :mod:`.jit`, as numba intrinsics.

Inside a loop, numba calls libm for ``math.exp`` and ``math.tanh`` one element at a time, which keeps LLVM from
vectorising the loop (measured 5x and 45x slower than NumPy's SIMD ufuncs on 262144 float32 elements).  A
polynomial form written in Python and inlined by numba vectorises, but costs about half a second of compile
time per call site.  These intrinsics emit the polynomial forms as LLVM instructions at each call site: no
calls, nothing to type, so the loop vectorises and compiles in milliseconds.  Imported only by the generated
kernels (it needs numba).

* ``exp``: Cephes' ``expf``: ``x = n*ln2 + r`` with ``|r| <= ln2/2`` (a two-part Cody-Waite ``ln2``), a
  degree-7 polynomial for ``exp(r)``, and ``2**n`` as the product of two powers of two written into the
  exponent field (so ``n`` may reach 128 and small results underflow gradually).  Within 1 ulp over the float32
  range; ``inf`` above 88.7228 (``x`` clamped to 88.8 first), 0 below -104, NaN passes.
* ``tanh``: Cephes' ``tanhf``: an odd polynomial below ``|x| = 0.625``, ``copysign(1 - 2/(exp(2|x|) + 1), x)``
  above.
* ``sigmoid``: ``1 / (1 + exp(-|x|))``, times ``exp(-|x|)`` for negative ``x``.
* ``erf``: ``x * P(x*x)`` below ``|x| = 1`` and ``copysign(1 - exp(Q(|x| - 1)), x)`` from 1 to 4 (``|x|`` clamped
  there: float32 ``erf(4)`` is 1), ``P`` of degree 6 and ``Q`` of degree 8 fitted by weighted least squares on
  2000 Chebyshev nodes against float64 ``erf`` (relative error for ``P``, ``log(1 - erf)`` for ``Q``): within
  3 ulp.

``SEL(c, a, b)`` is ``a if c else b`` as one ``select`` instruction: numba lowers a conditional expression to
branches and basic blocks, each of which costs compile time (about 15 ms a conditional, measured), and leaves
the vectorising of the loop to LLVM's if-conversion.
"""
from __future__ import annotations

from llvmlite import ir
from numba import types
from numba.core.extending import intrinsic

_I32 = ir.IntType(32)
_EXP_P = (1.39819995e-3, 8.33345191e-3, 4.16657959e-2, 1.66666655e-1, 5.00000012e-1)
_TANH_P = (2.06390887954e-2, -5.37397155531e-2, 1.33314422036e-1, -3.33332819422e-1)
_ERF_P = (7.898202146188179e-05, -0.0008024351375056439, 0.005190053212042563, -0.026854808300352334,
          0.11283612420614728, -0.3761262884223105, 1.12837916650957)  # (highest degree first)
_ERF_Q = (1.6141473982899355e-06, -3.2679090920132436e-05, 0.00031883325706416057, -0.0020506309293303066,
          0.01007247438306554, -0.04157150178800543, -0.8431064114902301, -2.638967445513016,
          -1.8496055133280342)


def _const(x, v):
    return ir.Constant(x.type, v)


def exp_ir(b, x):
    """The instructions of float32 ``exp(x)`` at builder ``b`` (see the module docstring).  ``n`` is rounded by
    adding and subtracting 1.5 * 2**23 (``llvm.floor`` and a final overflow select each made the loop several
    times slower); NaN passes the clamps (an ordered comparison with NaN is false) and is returned as it is."""
    def clamp(v, op, c):  # (a min/max: v if the comparison fails, NaN included)
        return b.select(b.fcmp_ordered(op, v, _const(x, c)), _const(x, c), v)
    v = clamp(clamp(x, "<", -104.0), ">", 88.8)  # (88.8 > log(FLT_MAX): the scaling below overflows to inf)
    n = b.fmul(v, _const(x, 1.4426950408889634))
    n = b.fsub(b.fadd(n, _const(x, 12582912.0)), _const(x, 12582912.0))
    r = b.fsub(b.fsub(v, b.fmul(n, _const(x, 0.693359375))), b.fmul(n, _const(x, -2.12194440e-4)))
    p = _const(x, 1.98756915e-4)
    for c in _EXP_P:
        p = b.fadd(b.fmul(p, r), _const(x, c))
    p = b.fadd(b.fadd(b.fmul(b.fmul(p, r), r), r), _const(x, 1.0))
    k = b.fptosi(n, _I32)
    h = b.ashr(k, ir.Constant(_I32, 1))

    def power_of_two(e):
        return b.bitcast(b.shl(b.add(e, ir.Constant(_I32, 127)), ir.Constant(_I32, 23)), x.type)
    p = b.fmul(b.fmul(p, power_of_two(h)), power_of_two(b.sub(k, h)))
    return b.select(b.fcmp_ordered("==", x, x), p, x)


def tanh_ir(b, x):
    """The instructions of float32 ``tanh(x)`` at builder ``b``."""
    a = b.call(b.module.declare_intrinsic("llvm.fabs", [x.type]), [x])
    z = b.fmul(x, x)
    s = _const(x, -5.70498872745e-3)
    for c in _TANH_P:
        s = b.fadd(b.fmul(s, z), _const(x, c))
    s = b.fadd(b.fmul(b.fmul(s, z), x), x)
    e = exp_ir(b, b.fadd(a, a))
    big = b.fsub(_const(x, 1.0), b.fdiv(_const(x, 2.0), b.fadd(e, _const(x, 1.0))))
    copysign = b.module.declare_intrinsic("llvm.copysign", [x.type], ir.FunctionType(x.type, [x.type, x.type]))
    big = b.call(copysign, [big, x])
    return b.select(b.fcmp_ordered(">=", a, _const(x, 0.625)), big, s)


def sigmoid_ir(b, x):
    """The instructions of float32 ``sigmoid(x)`` at builder ``b``: ``e = exp(-|x|)``, then ``1 / (1 + e)`` for
    ``x >= 0`` and ``e / (1 + e)`` below (which keeps the tiny results of large negative ``x``)."""
    a = b.call(b.module.declare_intrinsic("llvm.fabs", [x.type]), [x])
    e = exp_ir(b, b.fsub(_const(x, 0.0), a))
    r = b.fdiv(_const(x, 1.0), b.fadd(_const(x, 1.0), e))
    return b.select(b.fcmp_ordered(">=", x, _const(x, 0.0)), r, b.fmul(e, r))


def _horner(b, coeffs, t):
    p = _const(t, coeffs[0])
    for c in coeffs[1:]:
        p = b.fadd(b.fmul(p, t), _const(t, c))
    return p


def erf_ir(b, x):
    """The instructions of float32 ``erf(x)`` at builder ``b``."""
    a = b.call(b.module.declare_intrinsic("llvm.fabs", [x.type]), [x])
    near = b.fmul(_horner(b, _ERF_P, b.fmul(x, x)), x)
    top = b.select(b.fcmp_ordered("<", a, _const(x, 4.0)), a, _const(x, 4.0))
    far = b.fsub(_const(x, 1.0), exp_ir(b, _horner(b, _ERF_Q, b.fsub(top, _const(x, 1.0)))))
    copysign = b.module.declare_intrinsic("llvm.copysign", [x.type], ir.FunctionType(x.type, [x.type, x.type]))
    r = b.select(b.fcmp_ordered("<", a, _const(x, 1.0)), near, b.call(copysign, [far, x]))
    return b.select(b.fcmp_ordered("==", x, x), r, x)


def _float32_intrinsic(emit):
    def typer(typingctx, x):
        if x != types.float32:
            return None
        return types.float32(types.float32), lambda context, builder, sig, args: emit(builder, args[0])
    typer.__name__ = emit.__name__[:-3].upper() + "32"
    return intrinsic(typer)


EXP32 = _float32_intrinsic(exp_ir)
TANH32 = _float32_intrinsic(tanh_ir)
SIGMOID32 = _float32_intrinsic(sigmoid_ir)
ERF32 = _float32_intrinsic(erf_ir)


@intrinsic
def SEL(typingctx, c, a, b):
    """``a if c else b`` without a branch."""
    if c != types.boolean or a != b:
        return None
    return a(c, a, b), lambda context, builder, sig, args: builder.select(*args)

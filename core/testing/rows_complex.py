"""Op table: complex numbers (construction, parts and views, ``angle``/``conj``, arithmetic, functions,
products) with gradients in PyTorch's conjugate convention.  Row format and checks: :mod:`ember.testing.row`.

The checks compare real tensors, so a complex input is built inside the call from two real ones
(``m.complex(re, im)``: its gradient reaches them through the complex op), and a complex output is returned
as real pairs (:func:`real_pairs`): values, gradients, ``gradcheck`` and ``gradgradcheck`` then check complex
results and PyTorch's conjugate gradient convention.
"""
from __future__ import annotations

from .row import Row, Sampler

r = Sampler(8901).r


def real_pairs(m, y):
    """A complex ``y`` as ``(..., 2)`` real pairs (resolving PyTorch's lazy conjugation first), a real one as is."""
    return m.view_as_real(y.resolve_conj()) if y.is_complex() else y


ROWS = [
    Row("complex", lambda m, x, y: real_pairs(m, m.complex(x, y)), [[r(2, 3), r(2, 3)], [r(2, 1), r(3)]]),
    Row("polar", lambda m, x, y: real_pairs(m, m.polar(x, y)), [[r(2, 3, positive=True), r(2, 3)]]),
    Row("real", lambda m, x, y: m.complex(x, y).real * 2, [[r(2, 3), r(2, 3)]]),
    Row("imag", lambda m, x, y: m.imag(m.complex(x, y) ** 2), [[r(2, 3), r(2, 3)]]),
    Row("real_of_real", lambda m, x: m.real(x), [[r(3)]]),
    Row("view_as_real", lambda m, x, y: m.view_as_real(m.complex(x, y) * (1 - 2j)), [[r(2, 3), r(2, 3)]]),
    Row("view_as_complex", lambda m, x: real_pairs(m, m.view_as_complex(x.contiguous()) ** 2), [[r(3, 2)]],
        tags=("contiguous_only",)),
    Row("view_as_real_copy", lambda m, x, y: m.view_as_real_copy(m.complex(x, y)), [[r(2, 3), r(2, 3)]]),
    Row("view_as_complex_copy", lambda m, x: real_pairs(m, m.view_as_complex_copy(x.contiguous())),
        [[r(3, 2, grad=False)]], grad=False,
        tags=("contiguous_only",)),
    Row("angle", lambda m, x, y: m.angle(m.complex(x, y)), [[r(2, 3), r(2, 3)]]),
    Row("angle_real", lambda m, x: m.angle(x), [[r(5)]]),
    Row("conj", lambda m, x, y: real_pairs(m, m.complex(x, y).conj() * (2 + 1j)), [[r(2, 3), r(2, 3)]]),
    Row("conj_physical", lambda m, x, y: real_pairs(m, m.conj_physical(m.complex(x, y)) ** 2),
        [[r(2, 3), r(2, 3)]]),
    Row("conj_real", lambda m, x: m.conj(x) * 2, [[r(3)]]),
    Row("complex_abs", lambda m, x, y: m.complex(x, y).abs(), [[r(2, 3), r(2, 3)]]),
    Row("isreal", lambda m, x: m.isreal(m.complex(x, x * (x > 0))), [[r(2, 3, grad=False)]], grad=False),
    *[Row(f"complex_{f}", lambda m, x, y, f=f: real_pairs(m, getattr(m.complex(x, y), f)()), [[r(2, 3), r(2, 3)]])
      for f in ("exp", "log", "sqrt", "sin", "cos", "tanh", "sigmoid", "reciprocal", "rsqrt", "square", "neg",
                "sum", "mean")],
    Row("complex_arith", lambda m, x, y: real_pairs(m, (m.complex(x, y) * 3 - 1j) / (m.complex(y, x) + 2) ** 2),
        [[r(2, 3), r(2, 3)]]),
    Row("complex_pow", lambda m, x, y: real_pairs(m, m.complex(x + 1, y) ** m.complex(y, x)),
        [[r(2, 3), r(2, 3)]]),
    Row("complex_mixed", lambda m, x, y: real_pairs(m, x * m.complex(y, x) + x.exp() * 1j), [[r(2, 3), r(2, 3)]]),
    Row("complex_matmul", lambda m, x, y: real_pairs(m, m.complex(x, y) @ m.complex(y, x).mT),
        [[r(2, 3), r(2, 3)], [r(2, 2, 3), r(2, 2, 3)]]),
    Row("complex_matvec", lambda m, x, y: real_pairs(m, m.complex(x, y) @ m.complex(y[0], x[0])),
        [[r(3, 3), r(3, 3)]]),
    Row("complex_views", lambda m, x, y: real_pairs(m, m.complex(x, y).reshape(3, 2).t()[1:, ::2] * 2),
        [[r(2, 3), r(2, 3)]]),
    Row("complex_index_cat",
        lambda m, x, y: real_pairs(m, m.cat([m.complex(x, y)[1], m.stack([m.complex(y, x)[0]])[0]])),
        [[r(2, 3), r(2, 3)]]),
    Row("mH", lambda m, x, y: real_pairs(m, m.complex(x, y).mH * (1 + 1j)), [[r(2, 3), r(2, 3)]]),
    Row("complex_adjoint", lambda m, x, y: real_pairs(m, m.adjoint(m.complex(x, y))), [[r(2, 2, 3), r(2, 2, 3)]]),
    Row("to_complex", lambda m, x: real_pairs(m, x.to(m.complex64 if x.dtype == m.float32 else m.complex128) * 1j),
        [[r(2, 3)]]),
]


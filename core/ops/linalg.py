"""Linear algebra: ``matmul`` and friends, ``einsum``, norms, and every ``ember.linalg`` name.

Products and norms are here; inverses, determinants, solves and decompositions
are in :mod:`ember.ops.linalg_decomp`.  Each function is exported to the
namespaces PyTorch has it in: ``ember.*``, ``Tensor.*`` and ``ember.linalg.*``.
"""
from __future__ import annotations

import math
import string

from .. import dtypes
from ..autograd.function import Op, SavedOf, composite_node, keep_args, keep_saved, named_node, optional, rename_node
from ..autograd.grad_mode import no_grad
from ..dispatch import apply, autocasting, binary, cast, unary
from ..writes import copy_into_out, out_or
from ..registry import NAMESPACES, check_tensor, export, op_class
from ..tensor import Tensor, _wrap_dim
from .creation import eye
from .linalg_decomp import svdvals
from .shape import _unsafe_view, broadcast_shapes, broadcast_tensors, cat, strides_allow

LINALG = ("linalg",)
EVERYWHERE = ("linalg", "torch", "Tensor")


def _matmul_vjp(ctx, g):
    a, b = ctx.inputs  # each kept only for the other's gradient (save_for)
    if g.dtype.category == dtypes.COMPLEX:  # the adjoint: g @ b^H, a^H @ g
        a, b = a if a is None else a.conj(), b if b is None else b.conj()
    ga = gb = None
    na, nb = len(ctx._shapes[0][0]), len(ctx._shapes[1][0])
    nf = ctx.next_functions
    if na == 1 and nb == 1:
        return g * b if nf[0][0] is not None else None, g * a if nf[1][0] is not None else None
    if nf[0][0] is not None:
        if nb == 1:
            ga = g.unsqueeze(-1) * b
        elif na == 1:
            ga = (g.unsqueeze(-2) @ b.mT).squeeze(-2)
        else:
            ga = g @ b.mT
    if nf[1][0] is not None:
        if na == 1:
            gb = a.unsqueeze(-1) * g.unsqueeze(-2)
        elif nb == 1:
            gb = (a.mT @ g.unsqueeze(-1)).squeeze(-1)
        elif nb == 2 and na > 2:
            # a stack times one matrix: the weight gradient is one GEMM over the flattened stack
            gb = a.flatten(0, -2).mT @ g.flatten(0, -2)  # (flatten: an empty stack too)
        else:
            gb = a.mT @ g
    return ga, gb


Matmul = op_class("Matmul", "matmul", saves="input", vjp=_matmul_vjp, backward_name="MmBackward0", arity=2,
                  save_for=((1,), (0,)), saved_names=("self", "mat2"))


def _matmul_sizes(node):
    """PyTorch's ``_saved_self_sym_sizes`` of the node its matmul leaves for these operands' ranks: mm's operand, the
    one-row product that ``squeeze_(0)`` takes, or the product that ``_unsafe_view`` takes: a stack folded into the
    rows of one mm or mv (a stack times a matrix or a vector, or a vector that needs a gradient times a stack), else
    the batched product."""
    name, sa, sb = type(node).__name__, node._shapes[0][0], node._shapes[1][0]
    if name != "UnsafeViewBackward0":
        return sa if name == "MmBackward0" else (1, sb[-1]) if name == "SqueezeBackward4" else None
    if len(sb) <= 2:
        return (math.prod(sa[:-1]),) + tuple(sb[1:])
    if len(sa) == 1 and node._next[0] is not None:
        return (math.prod(sb[:-2]) * sb[-1],)
    return (math.prod(broadcast_shapes(sa[:-2], sb[:-2])), sa[-2] if len(sa) > 1 else 1, sb[-1])


Matmul.saved_args = {"self_sym_sizes": _matmul_sizes,
                     "mat2_sym_sizes": lambda n: n._shapes[1][0] if type(n).__name__ == "MmBackward0" else None,
                     "dim": lambda n: 0 if type(n).__name__ == "SqueezeBackward4" else None}



@export(to=EVERYWHERE)
def matmul(input, other, *, out=None):  # noqa: A002
    """Matrix product with NumPy/PyTorch batching and broadcasting rules.

    >>> import ember
    >>> ember.ones(2, 3) @ ember.ones(3)
    tensor([3., 3.])
    """
    if not isinstance(input, Tensor) or not isinstance(other, Tensor):
        raise TypeError(f"matmul(): arguments must be Tensors, got {type(input).__name__} and "
                        f"{type(other).__name__}")
    sa, sb = input._data.shape, other._data.shape  # checked on the arrays: this is a hot path
    if not sa or not sb:
        raise RuntimeError(f"both arguments to matmul need to be at least 1D, but they are {len(sa)}D and "
                           f"{len(sb)}D")
    ka = sa[-1]
    kb = sb[-2] if len(sb) > 1 else sb[0]
    if ka != kb:
        if len(sa) == 2 and len(sb) == 2:
            raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({sa[0]}x{ka} and {sb[0]}x{sb[1]})")
        raise RuntimeError(f"matmul: size mismatch, got input {list(sa)} and other {list(sb)} "
                           f"(inner dimensions {ka} and {kb} differ)")
    if input._data.dtype is not other._data.dtype and input.dtype is not other.dtype and not autocasting(input):
        raise RuntimeError(f"expected m1 and m2 to have the same dtype, but got: {input.dtype} != {other.dtype}")
    if input.dtype is dtypes.bool and 0 not in sa and 0 not in sb:  # PyTorch's BLAS kernels have no bool code
        raise NotImplementedError(f"\"{_BLAS_KERNEL.get((len(sa), len(sb)), 'bmm')}\" not implemented for 'Bool'")
    if len(sa) > 2 and len(sb) > 2 and sa[:-2] != sb[:-2] and (input._rg or other._rg):
        input, other = _batched_operands(input, other)
    # the node made as PyTorch's node for these ranks (MmBackward0 for two matrices)
    r = binary(Matmul if len(sa) == 2 and len(sb) == 2 else _MATMUL_NODE.get((len(sa), len(sb)), _MATMUL_BATCHED),
               input, other)
    return r if out is None else copy_into_out(out, r)


def _batched_operands(a, b):
    """``a`` and ``b`` of a product of stacks with different batch dims, each copied where PyTorch's matmul keeps a
    copy of it for backward (then an in-place change of the input refuses nothing): a stack of one against a 3-D
    stack is squeezed and the other stack's batch folded into its rows (the right one transposed); otherwise both
    are expanded to the broadcast batch and flattened to one batch dim.  Elsewhere the node keeps the inputs."""
    if a.dim() == b.dim() == 3 and 1 in (a.shape[0], b.shape[0]):
        if b.shape[0] == 1:
            return (a if strides_allow(tuple(a.shape), a.stride(), (a.shape[0] * a.shape[1], a.shape[2]))
                    else a.clone()), b
        bt = b.mT
        folds = strides_allow(tuple(bt.shape), bt.stride(), (bt.shape[0] * bt.shape[1], bt.shape[2]))
        return a, b if folds else b.clone()
    batch = tuple(broadcast_shapes(a.shape[:-2], b.shape[:-2]))
    kept = []
    for t in (a, b):
        k = len(batch) - (t.dim() - 2)
        strides = (0,) * k + tuple(0 if n == 1 else s for n, s in zip(t.shape[:-2], t.stride()[:-2]))
        viewed = strides_allow(batch + tuple(t.shape[-2:]), strides + t.stride()[-2:],
                               (math.prod(batch),) + tuple(t.shape[-2:]))
        kept.append(t if viewed else t.clone())
    return kept


# PyTorch's kernel (named in its refusal of a dtype), by the operands' ranks
_BLAS_KERNEL = {(2, 2): "addmm_impl_cpu_", (1, 2): "addmm_impl_cpu_", (2, 1): "addmv_impl_cpu", (1, 1): "dot"}
# PyTorch's node and its names of the saved operands, by the operands' ranks
_MATMUL_NODE = {k: named_node(Matmul, *v) for k, v in {
    (1, 1): ("DotBackward0", ("self", "tensor")), (2, 1): ("MvBackward0", ("self", "vec")),
    (1, 2): ("SqueezeBackward4", ())}.items()}
_MATMUL_BATCHED = named_node(Matmul, "UnsafeViewBackward0", ())


@export
def mm(input, mat2, *, out=None):  # noqa: A002
    """Product of two matrices (2-D only).

    >>> import ember
    >>> ember.mm(ember.ones(2, 3), ember.ones(3, 1))
    tensor([[3.],
            [3.]])
    """
    if input.dim() != 2 or mat2.dim() != 2:
        raise RuntimeError(f"mm: expected 2D tensors, got {input.dim()}D and {mat2.dim()}D")
    return matmul(input, mat2, out=out)


export(matmul, "__matmul__", to=("Tensor",))


@export(name="__rmatmul__", to=("Tensor",))
def _rmatmul(self, other):
    return matmul(other, self)


def _need(t, n, op, what="tensor"):
    if t.dim() != n:
        raise RuntimeError(f"{op}: Expected {n}-D {what}, got {t.dim()}-D tensor of shape {list(t.shape)}")


@export
def bmm(input, mat2, *, out=None) -> Tensor:  # noqa: A002
    """Batched product of ``[b, n, m]`` and ``[b, m, p]`` (no broadcasting).

    >>> import ember
    >>> ember.bmm(ember.ones(2, 1, 3), ember.ones(2, 3, 4)).shape
    ember.Size([2, 1, 4])
    """
    _need(input, 3, "bmm", "batch1")
    _need(mat2, 3, "bmm", "batch2")
    if input.shape[0] != mat2.shape[0]:
        raise RuntimeError(f"bmm: batch1 and batch2 must have same number of batches, got {input.shape[0]} and "
                           f"{mat2.shape[0]}")
    return rename_node(matmul(input, mat2, out=out), "BmmBackward0")


@export
def mv(input, vec, *, out=None) -> Tensor:  # noqa: A002
    """Matrix-vector product.

    >>> import ember
    >>> ember.mv(ember.eye(2), ember.tensor([1., 2.]))
    tensor([1., 2.])
    """
    if input.dim() != 2 or vec.dim() != 1:
        raise RuntimeError(f"vector + matrix @ vector expected, got {input.dim()}, {vec.dim()}")
    return matmul(input, vec, out=out)


@export
def dot(input, tensor, *, out=None) -> Tensor:  # noqa: A002
    """Inner product of two 1-D tensors.

    >>> import ember
    >>> ember.dot(ember.tensor([1., 2.]), ember.tensor([3., 4.]))
    tensor(11.)
    """
    if input.dim() != 1 or tensor.dim() != 1:
        raise RuntimeError(f"1D tensors expected, but got {input.dim()}D and {tensor.dim()}D tensors")
    if input.shape[0] != tensor.shape[0]:
        raise RuntimeError(f"inconsistent tensor size, expected tensor [{input.shape[0]}] and src "
                           f"[{tensor.shape[0]}] to have the same number of elements, but got {input.shape[0]} "
                           f"and {tensor.shape[0]} elements respectively")
    return matmul(input, tensor, out=out)


@export
def vdot(input, other, *, out=None) -> Tensor:  # noqa: A002
    """Inner product conjugating the first vector.

    >>> import ember
    >>> ember.vdot(ember.tensor([1., 2.]), ember.tensor([3., 4.]))
    tensor(11.)
    """
    r = dot(input.conj() if input.is_complex() else input, other)
    return out_or(composite_node(r, "VdotBackward0"), out)


# PyTorch's refusal of an input of another dtype than the product's operands, by node (addr promotes them)
_INPUT_DTYPE = {"AddmmBackward0": "self and mat2 must have the same dtype, but got {} and {}",
                "AddbmmBackward0": "self and mat2 must have the same dtype, but got {} and {}",
                "AddmvBackward0": "addmv input tensors must have the same dtype, but got {0}, {1}, and {1}",
                "BaddbmmBackward0": "Input dtypes must be the same, got: input {0}, batch1: {1}, batch2: {1}"}


def _scaled_sum(input, prod, beta, alpha, out, node, operands=(), of=None, **sizes):
    """``beta * input + alpha * prod`` under the name of PyTorch's fused op's node ``node``, keeping its numbers,
    ``sizes`` and, by PyTorch's names ``operands``, the two operands that the product node (of ``prod``, or of
    ``of``) saved."""
    check_tensor(input, node.removesuffix("Backward0").lower())  # (PyTorch's signatures take no number here)
    if input.dtype is not prod.dtype and node in _INPUT_DTYPE:
        if not autocasting(input):
            raise RuntimeError(_INPUT_DTYPE[node].format(dtypes.type_name(input.dtype), dtypes.type_name(prod.dtype)))
        input = cast(input, prod.dtype)  # (autocast casts the whole op's operands, input too)  # noqa: A001
    if prod.dtype.category <= dtypes.INT and input.dtype.category <= dtypes.INT:
        beta, alpha = int(beta), int(alpha)  # integer results: the scalars truncated, as PyTorch converts them
    r = prod if alpha == 1 else prod * alpha
    # beta == 0 ignores input entirely (nan and inf in it do not propagate), as in PyTorch
    r = r + (input if beta == 1 else input * beta) if beta != 0 else r + input.detach().new_zeros(())
    fn = (prod if of is None else of)._fn
    if fn is not None and operands:
        sizes.update({name: SavedOf(fn, i) for i, name in enumerate(operands)})
    return out_or(keep_args(rename_node(r, node), alpha=alpha, beta=beta, **sizes), out)


@export(inplace=True)
def addmm(input, mat1, mat2, *, beta=1, alpha=1, out=None) -> Tensor:  # noqa: A002
    """``beta * input + alpha * (mat1 @ mat2)``.

    >>> import ember
    >>> ember.addmm(ember.ones(2, 2), ember.eye(2), ember.eye(2), beta=2)
    tensor([[3., 2.],
            [2., 3.]])
    """
    return _scaled_sum(input, mm(mat1, mat2), beta, alpha, out, "AddmmBackward0", ("mat1", "mat2"),
                       mat1_sym_sizes=tuple(mat1.shape), mat2_sym_sizes=tuple(mat2.shape))


@export(inplace=True)
def addmv(input, mat, vec, *, beta=1, alpha=1, out=None) -> Tensor:  # noqa: A002
    """``beta * input + alpha * (mat @ vec)``.

    >>> import ember
    >>> ember.addmv(ember.ones(2), ember.eye(2), ember.tensor([1., 2.]))
    tensor([2., 3.])
    """
    return _scaled_sum(input, mv(mat, vec), beta, alpha, out, "AddmvBackward0", ("mat", "vec"))


# PyTorch shows this in-place form as ``torch.addmv_`` too: the Tensor method the registry derived
export(NAMESPACES["Tensor"]["addmv_"], "addmv_", to=("torch",))


@export(inplace=True)
def baddbmm(input, batch1, batch2, *, beta=1, alpha=1, out=None) -> Tensor:  # noqa: A002
    """``beta * input + alpha * bmm(batch1, batch2)``.

    >>> import ember
    >>> ember.baddbmm(ember.zeros(3, 2, 2), ember.ones(3, 2, 4), ember.ones(3, 4, 2)).shape
    ember.Size([3, 2, 2])
    """
    return _scaled_sum(input, bmm(batch1, batch2), beta, alpha, out, "BaddbmmBackward0", ("batch1", "batch2"))


@export(inplace=True)
def addbmm(input, batch1, batch2, *, beta=1, alpha=1, out=None) -> Tensor:  # noqa: A002
    """``beta * input + alpha * sum_b(batch1[b] @ batch2[b])``.

    >>> import ember
    >>> ember.addbmm(ember.zeros(2, 2), ember.ones(3, 2, 4), ember.ones(3, 4, 2))
    tensor([[12., 12.],
            [12., 12.]])
    """
    prod = bmm(batch1, batch2)
    return _scaled_sum(input, prod.sum(0, dtype=prod.dtype), beta, alpha, out, "AddbmmBackward0",  # (no int64 sum)
                       ("batch1", "batch2"), prod, batch1_sym_argsize_0=batch1.shape[0],
                       batch1_sym_argsize_1=batch1.shape[1], batch2_sym_argsize_2=batch2.shape[2])


@export(inplace=True)
def addr(input, vec1, vec2, *, beta=1, alpha=1, out=None) -> Tensor:  # noqa: A002
    """``beta * input + alpha * outer(vec1, vec2)``.

    >>> import ember
    >>> ember.addr(ember.zeros(2, 2), ember.tensor([1., 2.]), ember.tensor([1., 1.]))
    tensor([[1., 1.],
            [2., 2.]])
    """
    prod = vec1.outer(vec2)
    r = _scaled_sum(input, prod, beta, alpha, out, "AddrBackward0")
    if r._fn is not None and prod._fn is not None:  # the vectors, as outer's product node keeps them
        keep_args(r, **r._fn.__dict__["_args"], vec1=_vector_of(prod._fn, 0), vec2=_vector_of(prod._fn, 1))
    return r


def _vector_of(node, slot):
    """A ``keep_args`` value: the operand that product ``node`` keeps at ``slot`` (a column or a row of an outer
    product), read as a vector; None where the node did not keep it."""
    def read():
        v = node._value_saved(slot)
        return optional(None) if v is None else v.reshape(-1)
    return read


# --------------------------------------------------------------------------- einsum and friends
class Einsum(Op):
    save_inputs = True

    @staticmethod
    def forward(ctx, k, arrays, ins, rhs):
        ctx.ins, ctx.rhs = ins, rhs
        return k["einsum"](",".join(ins) + "->" + rhs, *arrays)

    @staticmethod
    def backward(ctx, g):
        nf = ctx._next
        # an operand's values are read only by the other operands' gradients (one operand's: by none)
        ops = ctx.inputs_except({j for j in range(len(nf)) if all(n is None for i, n in enumerate(nf) if i != j)})
        grads = []
        for i, (subs, t) in enumerate(zip(ctx.ins, ops)):
            if nf[i] is None:
                grads.append(None)
                continue
            others = [s for j, s in enumerate(ctx.ins) if j != i]
            values = [o for j, o in enumerate(ops) if j != i]
            subs, eyes = _unrepeat(subs, t, ctx.ins, ctx.rhs)
            for pair, identity in eyes:
                others.append(pair)
                values.append(identity)
            seen = set(ctx.rhs).union(*others)
            target = "".join(c for c in subs if c in seen)
            r = einsum_explicit([ctx.rhs, *others], target, [g, *values])
            if target != subs:
                shape = []
                for p, c in enumerate(subs):
                    if c not in seen:
                        r = r.unsqueeze(p)
                    shape.append(r.shape[p] if c in seen else t.shape[p])
                r = r.expand(shape)
            grads.append(r)
        return tuple(grads)


def _unrepeat(subs, t, ins, rhs):
    """Rename repeated subscripts of one operand (``ii`` -> ``ij``) and give the identities that tie them.

    The gradient of a diagonal read (``einsum('ii->i', a)``) is the diagonal embedding, which is
    an einsum with an identity matrix over the renamed pair.
    """
    if len(set(subs)) == len(subs):
        return subs, []
    used = set("".join(ins) + rhs)
    fresh = iter(c for c in string.ascii_letters if c not in used)
    out, eyes, first = [], [], set()
    for p, c in enumerate(subs):
        if c in first:
            f = next(fresh)
            out.append(f)
            eyes.append((c + f, eye(t.shape[p], dtype=t.dtype, device=t.device)))
        else:
            first.add(c)
            out.append(c)
    return "".join(out), eyes


def einsum_explicit(ins, rhs, operands):
    if len(operands) == 1 and ins[0] == rhs:
        return operands[0]
    return apply(Einsum, list(operands), tuple(ins), rhs)


def _parse_einsum(equation, shapes):
    eq = equation.replace(" ", "")
    lhs, arrow, rhs = eq.partition("->")
    ins = lhs.split(",")
    if len(ins) != len(shapes):
        raise RuntimeError("einsum(): more operands were provided than specified in the equation"
                           if len(shapes) > len(ins) else
                           "einsum(): fewer operands were provided than specified in the equation")
    letters = set(c for c in eq if c.isalpha())
    free = iter(c for c in string.ascii_letters if c not in letters)
    n_ell = max([len(sh) - (len(s) - 3) for s, sh in zip(ins, shapes) if "..." in s], default=0)
    ell = "".join(next(free) for _ in range(n_ell))
    out_ins = []
    for s, sh in zip(ins, shapes):
        if "..." in s:
            k = len(sh) - (len(s) - 3)
            s = s.replace("...", ell[n_ell - k:] if k else "")
        if len(s) != len(sh):
            raise RuntimeError(f"einsum(): the number of subscripts in the equation ({len(s)}) does not match the "
                               f"number of dimensions ({len(sh)}) for operand {len(out_ins)}"
                               f"{'' if '...' in equation else ' and no ellipsis was given'}")
        out_ins.append(s)
    if arrow:
        rhs = rhs.replace("...", ell)
    else:
        counts = {}
        for c in lhs:
            if c.isalpha():
                counts[c] = counts.get(c, 0) + 1
        rhs = ell + "".join(sorted(c for c, n in counts.items() if n == 1))
    sizes = {}
    for s, sh in zip(out_ins, shapes):
        for c, n in zip(s, sh):
            if sizes.setdefault(c, n) != n and n != 1 and sizes[c] != 1:
                raise RuntimeError(f"einsum(): operands do not broadcast with remapped shapes (original->remapped): "
                                   f"subscript '{c}' has size {sizes[c]} and {n}")
    return out_ins, rhs


@export(to=("torch",))
def einsum(equation: str, *operands) -> Tensor:
    """Einstein summation, e.g. ``einsum('bij,bjk->bik', a, b)`` (``...`` broadcasts).

    >>> import ember
    >>> ember.einsum("ij,j->i", ember.ones(2, 3), ember.ones(3))
    tensor([3., 3.])
    """
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    if len({t.dtype for t in operands}) > 1 and not autocasting(operands[0]):
        raise RuntimeError(f"einsum(): expected all operands to have the same dtype, got "
                           f"{[str(t.dtype) for t in operands]}")
    ins, rhs = _parse_einsum(equation, [t.shape for t in operands])
    if operands[0].dtype is dtypes.bool and all(t.numel() for t in operands) and any(  # (PyTorch's bmm: no bool)
            c not in rhs and sum(c in s for s in ins) > 1 for c in set("".join(ins))):
        raise NotImplementedError("\"bmm\" not implemented for 'Bool'")
    return apply(Einsum, list(operands), tuple(ins), rhs)


@export(to=("torch",))
def tensordot(a, b, dims=2, out=None) -> Tensor:
    """Sum over ``dims`` (a count of trailing/leading dims, or two lists of dims) of ``a`` and ``b``.

    >>> import ember
    >>> ember.tensordot(ember.ones(2, 3), ember.ones(3, 4), dims=1).shape
    ember.Size([2, 4])
    """
    if isinstance(dims, int):
        if dims < 0:
            raise RuntimeError(f"tensordot expects dims >= 0, but got dims={dims}")
        da, db = list(range(a.dim() - dims, a.dim())), list(range(dims))
    else:
        da, db = ([d] if isinstance(d, int) else list(d) for d in dims)
    da = [d % max(a.dim(), 1) for d in da]
    db = [d % max(b.dim(), 1) for d in db]
    for x, y in zip(da, db):
        if a.shape[x] != b.shape[y]:
            raise RuntimeError(f"contracted dimensions need to match, but first has size {a.shape[x]} in dim {x} "
                               f"and second has size {b.shape[y]} in dim {y}")
    ka = [d for d in range(a.dim()) if d not in da]
    kb = [d for d in range(b.dim()) if d not in db]
    m = math.prod(a.shape[d] for d in ka)
    n = math.prod(b.shape[d] for d in kb)
    k = math.prod(a.shape[d] for d in da)
    if ka or kb:
        r = a.permute(ka + da).reshape(m, k) @ b.permute(db + kb).reshape(k, n)
    else:  # every dim contracted: one dot, as PyTorch (whose view then takes a 0-d product)
        r = a.permute(da).reshape(k) @ b.permute(db).reshape(k)
    r = r.reshape([a.shape[d] for d in ka] + [b.shape[d] for d in kb])
    return out_or(r, out)


@export
def kron(input, other, *, out=None) -> Tensor:  # noqa: A002
    """Kronecker product (block ``input[i, j] * other``).

    >>> import ember
    >>> ember.kron(ember.eye(2), ember.ones(1, 2))
    tensor([[1., 1., 0., 0.],
            [0., 0., 1., 1.]])
    """
    n = max(input.dim(), other.dim())
    sa = (1,) * (n - input.dim()) + tuple(input.shape)
    sb = (1,) * (n - other.dim()) + tuple(other.shape)
    ia = tuple(x for d in range(n) for x in (sa[d], 1))
    ib = tuple(x for d in range(n) for x in (1, sb[d]))
    r = _unsafe_view(_unsafe_view(input, ia) * _unsafe_view(other, ib), tuple(sa[d] * sb[d] for d in range(n)))
    return out_or(r, out)




@export
def cross(input, other, dim=None, *, out=None) -> Tensor:  # noqa: A002
    """Cross product of 3-vectors along ``dim`` (the first dimension of size 3 when None).

    >>> import ember
    >>> ember.cross(ember.tensor([1., 0., 0.]), ember.tensor([0., 1., 0.]))
    tensor([0., 0., 1.])
    """
    if input.dim() != other.dim():
        raise RuntimeError(f"linalg.cross: inputs must have the same number of dimensions. (got shapes "
                           f"{list(input.shape)} and {list(other.shape)})")
    if input.shape != other.shape:
        input, other = broadcast_tensors(input, other)  # noqa: A001
    if dim is None:
        dim = next((d for d in range(input.dim()) if input.shape[d] == 3), -1)
    d = dim % max(input.dim(), 1)
    if input.shape[d] != 3 or other.shape[d] != 3:
        raise RuntimeError(f"linalg.cross: inputs dimension {dim} must have length 3. Got {input.shape[d]} and "
                           f"{other.shape[d]}")
    if input.dtype is not other.dtype:  # (PyTorch's kernel takes one dtype)
        raise RuntimeError(f"cross: expected scalar type {dtypes.type_name(input.dtype)} but found "
                           f"{dtypes.type_name(other.dtype)}")
    r = composite_node(input.roll(-1, d) * other.roll(-2, d) - input.roll(-2, d) * other.roll(-1, d),
                       "LinalgCrossBackward0")
    # (PyTorch's node keeps each operand that the other's gradient reads)
    return out_or(keep_saved(r, input if other.requires_grad else None, other if input.requires_grad else None), out)




@export(name="cross", to=LINALG)
def linalg_cross(input, other, *, dim=-1, out=None) -> Tensor:  # noqa: A002
    """``ember.linalg.cross``: :func:`cross` along ``dim`` (the last dimension by default), broadcasting.

    >>> import ember
    >>> ember.linalg.cross(ember.eye(3), ember.eye(3).roll(1, 0))
    tensor([[ 0., -1.,  0.],
            [ 0.,  0., -1.],
            [-1.,  0.,  0.]])
    """
    return cross(input, other, dim, out=out)


# --------------------------------------------------------------------------- more ember.linalg products
@export(to=LINALG)
def multi_dot(tensors, *, out=None) -> Tensor:
    """The product of two or more matrices, multiplied in the order that costs the fewest operations.

    The first tensor may be a vector (a row), the last one too (a column); every other one is 2-D.

    >>> import ember
    >>> ember.linalg.multi_dot([ember.tensor([1., 2.]), ember.eye(2), ember.tensor([2., 3.])])
    tensor(8.)
    """
    tensors = list(tensors)
    n = len(tensors)
    if n < 2:
        raise RuntimeError(f"multi_dot(): expected at least 2 tensors but got {n}")
    first, last = tensors[0], tensors[-1]
    if first.dim() not in (1, 2):
        raise RuntimeError(f"multi_dot(): the first tensor must be 1D or 2D but got {first.dim()}D")
    if last.dim() not in (1, 2):
        raise RuntimeError(f"multi_dot(): the last tensor must be 1D or 2D but got {last.dim()}D")
    for i, t in enumerate(tensors[1:-1], 1):
        if t.dim() != 2:
            raise RuntimeError(f"multi_dot(): tensor {i} must be 2D but got {t.dim()}D")
    if any(t.dtype != first.dtype for t in tensors):
        raise RuntimeError(f"multi_dot(): all tensors must have be the same dtype but tensor 0 is {first.dtype} "
                           f"and tensor {next(i for i, t in enumerate(tensors) if t.dtype != first.dtype)} is "
                           f"{next(t.dtype for t in tensors if t.dtype != first.dtype)}")
    mats = [first.unsqueeze(0) if first.dim() == 1 else first, *tensors[1:-1],
            last.unsqueeze(-1) if last.dim() == 1 else last]
    for i in range(n - 1):
        if mats[i].shape[1] != mats[i + 1].shape[0]:
            raise RuntimeError(f"multi_dot(): tensors {i} and {i + 1} with shapes {list(tensors[i].shape)} and "
                               f"{list(tensors[i + 1].shape)} cannot be multiplied")
    r = _chain(mats, _chain_order([m.shape[0] for m in mats] + [mats[-1].shape[1]]), 0, n - 1)
    # the product viewed as the result's shape (a vector end's dim dropped), PyTorch's last node even for matrices
    return out_or(r.view(tuple(first.shape[:-1]) + tuple(last.shape[1:])), out)


def _chain_order(p):
    """The matrix-chain split table for matrices of shapes ``p[i] x p[i + 1]`` (the textbook dynamic program)."""
    n = len(p) - 1
    cost = [[0] * n for _ in range(n)]
    split = [[0] * n for _ in range(n)]
    for length in range(1, n):
        for i in range(n - length):
            j = i + length
            cost[i][j] = math.inf
            for k in range(i, j):
                c = cost[i][k] + cost[k + 1][j] + p[i] * p[k + 1] * p[j + 1]
                if c < cost[i][j]:
                    cost[i][j], split[i][j] = c, k
    return split


def _chain(mats, split, i, j):
    if i == j:
        return mats[i]
    k = split[i][j]
    return mm(_chain(mats, split, i, k), _chain(mats, split, k + 1, j))


@export(to=LINALG)
def vecdot(x, y, *, dim=-1, out=None) -> Tensor:
    """``sum(conj(x) * y)`` along ``dim``, broadcasting the batch dimensions.

    >>> import ember
    >>> ember.linalg.vecdot(ember.tensor([[1., 2.], [3., 4.]]), ember.tensor([1., 1.]))
    tensor([3., 7.])
    """
    if x.dtype is not y.dtype and not autocasting(x):
        raise RuntimeError(f"linalg.vecdot: Expected x and y to have the same dtype, but found x of type {x.dtype} "
                           f"and y of type {y.dtype} instead")
    for t in (x, y):
        if t.dtype.category < dtypes.FLOAT:
            raise RuntimeError(f"linalg.vecdot: Expected a floating point or complex tensor as input. Got "
                               f"{t.dtype.name.capitalize()}")
    return out_or(((x.conj() if x.is_complex() else x) * y).sum(dim), out)


@export(name="vander", to=LINALG)
def linalg_vander(x, *, N=None) -> Tensor:  # noqa: N803
    """The Vandermonde matrix of the vectors ``x`` (batch): columns ``x^0, x^1, ..., x^(N-1)``.

    >>> import ember
    >>> ember.linalg.vander(ember.tensor([1, 2, 3]))
    tensor([[1, 1, 1],
            [1, 2, 4],
            [1, 3, 9]])
    """
    if x.dtype is dtypes.bool:
        raise RuntimeError("linalg.vander supports floating point, complex, and integer tensors, but got Bool")
    n = x.shape[-1] if x.dim() and N is None else N
    if n is None or n <= 1:
        raise RuntimeError("N must be greater than 1.")
    ones = x.detach().new_ones((*x.shape, 1))
    return cat([ones, x.unsqueeze(-1).expand(*x.shape, n - 1).cumprod(-1)], -1)


@export(to=("torch",))
def vander(x, N=None, increasing: bool = False) -> Tensor:  # noqa: N803
    """``torch.vander``: the Vandermonde matrix of a vector, powers decreasing (``increasing``: increasing).

    >>> import ember
    >>> ember.vander(ember.tensor([1, 2, 3]), 2)
    tensor([[1, 1],
            [2, 1],
            [3, 1]])
    """
    if x.dim() != 1:
        raise RuntimeError("x must be a one-dimensional tensor.")
    n = x.shape[0] if N is None else N
    if n < 0:
        raise RuntimeError("N must be non-negative.")
    if n <= 1:
        r = x.detach().new_ones((x.shape[0], n))
    else:
        r = linalg_vander(x, N=n)
    return r if increasing else r.flip(-1)


@export(name="diagonal", to=LINALG)
def linalg_diagonal(A, *, offset: int = 0, dim1: int = -2, dim2: int = -1) -> Tensor:
    """``ember.linalg.diagonal``: :func:`ember.diagonal` over the last two dimensions by default (a view).

    >>> import ember
    >>> ember.linalg.diagonal(ember.arange(8).view(2, 2, 2))
    tensor([[0, 3],
            [4, 7]])
    """
    return A.diagonal(offset, dim1, dim2)


# --------------------------------------------------------------------------- norms
# ``sqrt`` whose gradient at 0 is 0 (the subgradient PyTorch uses for norms).
def _norm_sqrt_vjp(ctx, g):
    y = ctx.output
    r = (g / (2 * y)).masked_fill(y == 0, 0)
    # an inf or NaN gradient stays NaN at a zero norm, as PyTorch's product with its masked quotient
    return r.masked_fill((y == 0).logical_and(g.isfinite().logical_not()), math.nan)


NormSqrt = op_class("NormSqrt", "sqrt", saves="output", vjp=_norm_sqrt_vjp, backward_name="NormBackward1", arity=1,
                    tags=("pointwise",), onnx="Sqrt")


@export(to=LINALG)
def vector_norm(x, ord=2, dim=None, keepdim=False, *, dtype=None, out=None):  # noqa: A002
    """The vector ``ord``-norm over ``dim`` (all elements when None).

    >>> import ember
    >>> ember.linalg.vector_norm(ember.tensor([3., -4.]), 1)
    tensor(7.)
    """
    if dtype is not None:
        x = cast(x, dtypes.as_dtype(dtype))
    if x.dtype.category < dtypes.FLOAT:
        raise RuntimeError(f"linalg.vector_norm: Expected a floating point or complex tensor as input. Got "
                           f"{x.dtype.name.capitalize()}")
    if x.dtype.name in ("float16", "bfloat16"):  # accumulated in float32 and rounded once, as PyTorch's
        return out_or(vector_norm(x.float(), ord, dim, keepdim).to(x.dtype), out)
    if ord == 2 and not x.is_complex():  # one pass fewer: squares need no abs
        sq = x * x
        r = _norm_node(unary(NormSqrt, sq.sum(dim, keepdim)), ord, dim, keepdim, sq._fn)
        return r if out is None else copy_into_out(out, r)
    a = x.abs() if not x.is_complex() else (x.real ** 2 + x.imag ** 2).sqrt()
    if ord == math.inf:
        r = a.amax(dim if dim is not None else (), keepdim)
    elif ord == -math.inf:
        r = a.amin(dim if dim is not None else (), keepdim)
    elif ord == 0:
        r = (a != 0).to(a.dtype).sum(dim, keepdim)
    elif ord == 2:
        r = unary(NormSqrt, (a * a).sum(dim, keepdim))
    elif ord == 1:
        r = a.sum(dim, keepdim)
    else:
        r = (a ** ord).sum(dim, keepdim) ** (1.0 / ord)
    return out_or(_norm_node(r, ord, dim, keepdim, None if x.is_complex() else a._fn), out)


def _norm_node(r, ord, dim, keepdim, keeper=None):  # noqa: A002
    """``r`` under the name of PyTorch's one node of vector_norm, keeping its arguments and saved tensors as that
    node does: its input (``_saved_self``) as the node ``keeper`` (of ``x * x`` or ``x.abs()``) keeps it, and its
    result (``_saved_result``), the output where ``r``'s node keeps it, else made again from the input when read;
    the saved inputs of ``r``'s own op (a sum, a power) are not PyTorch's."""
    dims = None if dim is None else (dim,) if isinstance(dim, int) else tuple(dim)
    fn = r._fn
    kept = {}
    if keeper is not None and fn is not None:
        kept["self"] = SavedOf(keeper, 0)
        if not fn.save_output:
            kept["result"] = lambda: _norm_again(keeper, ord, dims, keepdim)
    return keep_args(rename_node(r, "LinalgVectorNormBackward0", (None, None)), ord=ord, dim=optional(dims),
                     keepdim=keepdim, **kept)


def _norm_again(keeper, ord, dims, keepdim):  # noqa: A002
    """vector_norm of the input that node ``keeper`` keeps, outside the graph (``_saved_result`` read)."""
    with no_grad():
        return vector_norm(keeper._value_saved(0), ord, dims, keepdim)


@export(to=LINALG)
def matrix_norm(A, ord="fro", dim=(-2, -1), keepdim=False, *, dtype=None, out=None):  # noqa: A002
    """Matrix norm over the two dims ``dim``: 'fro', 'nuc', 1, -1, 2, -2, inf or -inf (PyTorch's meanings).

    >>> import ember
    >>> ember.linalg.matrix_norm(ember.tensor([[1., -2.], [3., 4.]]), 1)
    tensor(6.)
    """
    if dtype is not None:
        A = cast(A, dtypes.as_dtype(dtype))
    if A.dim() < 2:
        raise RuntimeError("linalg.matrix_norm: The input tensor A must have at least 2 dimensions.")
    if not isinstance(dim, (tuple, list)) or len(dim) != 2:
        raise RuntimeError(f"linalg.matrix_norm: dim must be a 2-tuple. Got {dim}")
    d0, d1 = (_wrap_dim(d, A.dim(), "linalg.matrix_norm") for d in dim)
    if d0 == d1:
        raise RuntimeError(f"linalg.matrix_norm: dims must be different. Got ({d0}, {d1})")
    if ord == "fro":
        return vector_norm(A, 2, (int(d0), int(d1)), keepdim, out=out)  # (the wrapped dims, as PyTorch passes them)
    if ord in (1, -1, math.inf, -math.inf):
        if A.dtype.category < dtypes.FLOAT:
            raise RuntimeError(f"linalg.matrix_norm: Expected a floating point or complex tensor as input. Got "
                               f"{dtypes.type_name(A.dtype)}")
        inner, outer = (d0, d1) if ord in (1, -1) else (d1, d0)
        r = A.abs().sum(inner, keepdim=keepdim)
        outer = outer if keepdim or outer < inner else outer - 1  # (the summed dimension gone before it)
        return out_or(r.amax(outer, keepdim) if ord > 0 else r.amin(outer, keepdim), out)  # PyTorch's last node
    if ord in ("nuc", 2, -2):
        sv = svdvals(A.movedim((d0, d1), (-2, -1)))
        r = sv.sum(-1) if ord == "nuc" else sv.amax(-1) if ord == 2 else sv.amin(-1)
        if keepdim:
            r = r.unsqueeze(-1).unsqueeze(-1).movedim((-2, -1), sorted((d0, d1)))
        return out_or(r, out)
    raise RuntimeError(f"linalg.matrix_norm: Order {ord} not supported.")


@export(name="norm", to=LINALG)
def linalg_norm(input, ord=None, dim=None, keepdim=False, *, dtype=None, out=None):  # noqa: A002
    """``ember.linalg.norm``: a vector norm over one dim (or everything), a matrix norm over two (``input`` is
    the matrix PyTorch's documentation calls ``A``; its parser takes ``input``).

    >>> import ember
    >>> ember.linalg.norm(ember.tensor([3., 4.]))
    tensor(5.)
    """
    if isinstance(dim, int):
        dim = (dim,)
    A = input  # noqa: N806
    if dim is None and ord is not None:
        if A.dim() not in (1, 2):
            raise RuntimeError(f"linalg.norm: If dim is not specified but ord is, the input must be 1D or 2D. "
                               f"Got {A.dim()}D.")
        dim = tuple(range(A.dim()))
    if dim is not None and len(dim) == 2:
        return matrix_norm(A, "fro" if ord is None else ord, dim, keepdim, dtype=dtype, out=out)
    return vector_norm(A, 2.0 if ord is None else ord, dim, keepdim, dtype=dtype, out=out)  # (PyTorch's default 2.0)

"""Core kernels: elementwise basics, reductions, movement, memory, creation, random."""
from __future__ import annotations


MUTATING = {"copy_": (0,), "fill_": (0,), "setitem": (0,), "index_put_acc": (0,)}  # they write into argument 0


def kernels(xp) -> dict:

    def relu(x):
        return xp.maximum(x, 0)

    def matmul(a, b):
        # a stack of matrices times one matrix is one GEMM over the flattened stack: array libraries
        # otherwise loop over the stack (NumPy: ~10x slower for Linear on 3-D input)
        if a.ndim > 2 and b.ndim == 2:
            lead = a.shape[:-1]
            return xp.reshape(xp.reshape(a, (-1, a.shape[-1])) @ b, lead + (b.shape[-1],))
        return xp.matmul(a, b)

    def relu_backward(g, out):
        # zero where the output is <= 0; a nan output passes its gradient on, as in PyTorch
        zero = xp.zeros((), dtype=g.dtype)
        return xp.where(out <= zero, zero, g)

    def sum_(x, axis=None, keepdims=False, dtype=None):
        return xp.sum(x, axis=axis, keepdims=keepdims, dtype=dtype)

    def mean(x, axis=None, keepdims=False, dtype=None):
        return xp.mean(x, axis=axis, keepdims=keepdims, dtype=dtype)

    def astype(x, dtype):
        return x.astype(dtype)

    def copy(x):
        return xp.array(x, copy=True)

    def contiguous(x):
        return xp.ascontiguousarray(x)

    def reshape(x, shape):
        return xp.reshape(x, shape)

    def view(x, shape):
        # a reshape that must not copy; raises when the strides do not allow it
        return xp.reshape(x, shape, copy=False)

    def index_put_acc(out, index, values):
        # out[index] += values, with repeated indices accumulating
        if all(i is None or i is Ellipsis or isinstance(i, (int, slice)) for i in index):
            basic = tuple(i for i in index if i is not None)
            if len(basic) != len(index):
                # the array API assigns through no None (newaxis): drop it and the size-1 axes it adds
                values = xp.reshape(xp.broadcast_to(values, out[index].shape), out[basic].shape)
            out[basic] = out[basic] + values
        else:
            xp.add.at(out, index, values)

    def getitem(x, index):
        return x[index]

    def setitem(x, index, value):
        x[index] = value

    def copy_(dst, src):
        dst[...] = src

    def fill_(x, value):
        x[...] = value

    def where(cond, x, y):
        return xp.where(cond, x, y)

    def expand(x, shape):
        return xp.broadcast_to(x, shape)

    def sum_to(x, shape):
        # reduce x to `shape` by summing the dimensions broadcasting added
        lead = x.ndim - len(shape)
        axes = tuple(range(lead)) + tuple(i + lead for i, n in enumerate(shape) if n == 1 and x.shape[i + lead] != 1)
        if axes:
            x = xp.sum(x, axis=axes, keepdims=True)
        return xp.reshape(x, shape) if lead else x

    def uniform(gen, shape, dtype, low=0.0, high=1.0):
        return gen.uniform(low, high, size=shape).astype(dtype, copy=False)

    def normal(gen, shape, dtype, mean=0.0, std=1.0):
        return gen.normal(mean, std, size=shape).astype(dtype, copy=False)

    def randint(gen, shape, dtype, low, high):
        return gen.integers(low, high, size=shape).astype(dtype, copy=False)

    def permutation(gen, n, dtype):
        return gen.permutation(n).astype(dtype, copy=False)

    def arange(start, end, step, dtype):
        return xp.arange(start, end, step, dtype=dtype)

    def linspace(start, end, steps, dtype):
        return xp.linspace(start, end, steps, dtype=dtype)

    def eye(n, m, dtype):
        return xp.eye(n, m, dtype=dtype)

    def full(shape, value, dtype):
        return xp.full(shape, value, dtype=dtype)

    def empty(shape, dtype):
        return xp.empty(shape, dtype=dtype)

    return {
        # pointwise
        "add": xp.add, "sub": xp.subtract, "mul": xp.multiply, "div": xp.divide,
        "neg": xp.negative, "exp": xp.exp, "log": xp.log, "relu": relu, "relu_backward": relu_backward,
        "gt": xp.greater, "ge": xp.greater_equal, "lt": xp.less, "le": xp.less_equal,
        "eq": xp.equal, "ne": xp.not_equal, "where": where, "pow": xp.power,
        "sqrt": xp.sqrt, "abs": xp.abs, "sign": xp.sign,
        # reductions
        "sum": sum_, "mean": mean, "sum_to": sum_to,
        # linear algebra
        "matmul": matmul,
        # movement (views where the layout allows)
        "reshape": reshape, "view": view, "permute": xp.transpose, "expand": expand,
        "getitem": getitem, "setitem": setitem, "index_put_acc": index_put_acc,
        # memory
        "astype": astype, "copy": copy, "contiguous": contiguous, "copy_": copy_, "fill_": fill_,
        # creation and random
        "full": full, "empty": empty, "arange": arange, "linspace": linspace, "eye": eye,
        "uniform": uniform, "normal": normal, "randint": randint, "permutation": permutation,
    }

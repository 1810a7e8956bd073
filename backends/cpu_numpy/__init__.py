"""The CPU backend: ember on NumPy.  Registered through the ``ember`` entry point.

Its strategy reaches the shared kernels through the backend contract's two hooks: the page pool
(:mod:`.workspace`) is its allocator, the thread pool (:mod:`.threads`) its block runner.
"""
import numpy as np

import ember
from ember.backend import ArrayBackend

from . import fastmath, sampling, threads, workspace
from .mt19937 import TorchMT19937
from .threads import MIN_SIZE, relu_backward_large, relu_large, split_binary


class NumpyBackend(ArrayBackend):
    name = "cpu"
    host = True
    array_type = np.ndarray
    allocate = staticmethod(workspace.empty)  # large kernel arrays on the reused pages of earlier calls
    run_blocks = staticmethod(threads.run_blocks)  # kernels' blocks on ember.get_num_threads() threads

    def __init__(self):
        super().__init__(np)  # NumPy's error state is left alone: the kernels that need it turn reports off

    def new_generator(self, index, seed):
        """PyTorch's CPU generator: mt19937 with its cached normals (:class:`.mt19937.TorchMT19937`)."""
        return TorchMT19937(seed)

    def generator_state(self, gen):
        """The state in ``torch.get_rng_state()``'s 5056-byte layout."""
        return gen.get_state()

    def set_generator_state(self, gen, state):
        gen.set_state(state)

    def overrides(self):
        add_reduce, empty, less_equal, putmask, maximum = np.add.reduce, np.empty, np.less_equal, np.putmask, np.maximum
        zeros = {}

        def sum_(x, axis=None, keepdims=False, dtype=None):
            if axis is None and not keepdims:
                dt = x.dtype if dtype is None else dtype
                if dtype is not None or dt.kind in "fc":  # NumPy would widen small integers itself
                    return add_reduce(x, None, dt, empty((), dt))  # a 0-d array, not a NumPy scalar to convert
            return add_reduce(x, axis=axis, dtype=dtype, keepdims=keepdims)

        shared_mean, divide, intp, ndarray = self.kernels["mean"], np.true_divide, np.intp, np.ndarray

        def mean(x, axis=None, keepdims=False, dtype=None):
            # float32/64 and complex: NumPy's own sum and division without np.mean's Python (~3 -> ~1 us on 4x4)
            if dtype is not None or x.dtype.kind not in "fc" or x.dtype.itemsize < 4 or not x.size:
                return shared_mean(x, axis, keepdims, dtype)
            dt = x.dtype
            r = add_reduce(x, axis, dt, None, keepdims)
            out = r if type(r) is ndarray else empty((), dt)  # (a 0-d array, not a NumPy scalar)
            return divide(r, intp(x.size // r.size), out=out, casting="unsafe")  # (np.mean's division)

        maximum_split = split_binary(maximum)

        def relu(x, out=None):
            zero = zeros.get(x.dtype)  # a Python 0 would cost NumPy a scalar conversion per call
            if zero is None:
                zero = zero_of(x.dtype)
            # zero first: where x is -0.0, maximum returns its second operand, PyTorch's -0.0
            n = x.size
            if n < 4096:
                return maximum(zero, x) if out is None else maximum(zero, x, out=out)
            if x.flags.c_contiguous and (out is None or out.flags.c_contiguous):
                return relu_large(x, out)  # against contiguous zeros; large ones on several threads
            if n < MIN_SIZE:
                return maximum(zero, x) if out is None else maximum(zero, x, out=out)
            return maximum_split(zero, x, out)  # a large strided one on several threads

        relu.writes_into = True  # relu_ (ReLU(inplace=True)) writes straight into the tensor

        def zero_of(dt):
            zero = zeros.get(dt)
            if zero is None:
                zero = zeros[dt] = np.zeros((), dt)
            return zero

        def relu_backward(g, out):
            # g zeroed where out <= 0 (a nan output passes g on, as in PyTorch)
            if g.size >= MIN_SIZE and g.shape == out.shape:
                return relu_backward_large(g, out)  # the same product, in blocks on several threads
            zero = zeros.get(out.dtype)
            if zero is None:
                zero = zero_of(out.dtype)
            mask = less_equal(out, zero)
            if g.size >= 4096 or g.shape != out.shape:
                # masked writes branch per element: on large arrays a multiply by the mask is ~8x faster
                # (an infinite g where out <= 0 then gives nan rather than 0)
                return g * ~mask
            # small: a ufunc over mixed dtypes costs microseconds to resolve, a masked write does not
            r = g.copy()
            putmask(r, mask, zero)
            return r

        shared_tanh_backward, shared_sigmoid_backward = self.kernels["tanh_backward"], self.kernels["sigmoid_backward"]
        multiply, subtract, ones = np.multiply, np.subtract, {}

        def one_of(dt):  # a 0-d one of dtype dt: a Python 1 costs NumPy a scalar conversion per call
            one = ones.get(dt)
            if one is None:
                one = ones[dt] = np.ones((), dt)
            return one

        # tanh's and sigmoid's gradients from the output with one temporary, reused (~0.2 us of a small node's 1.3)
        # (the output array given by position: the out= keyword costs NumPy ~40 ns a call to parse)
        def tanh_backward(g, out):
            dt = out.dtype
            if g.dtype is not dt or not g.ndim or g.shape != out.shape:  # (a 0-d product is a scalar)
                return shared_tanh_backward(g, out)
            one = ones.get(dt)
            t = multiply(out, out)
            subtract(one_of(dt) if one is None else one, t, t)
            return multiply(g, t, t)

        def sigmoid_backward(g, out):
            dt = out.dtype
            if g.dtype is not dt or not g.ndim or g.shape != out.shape:  # (a 0-d product is a scalar)
                return shared_sigmoid_backward(g, out)
            one = ones.get(dt)
            t = subtract(one_of(dt) if one is None else one, out)
            multiply(t, out, t)
            return multiply(g, t, t)

        def expand(x, shape):
            # a zero-stride view built directly: np.broadcast_to costs ~3 us of Python per call
            if not x.ndim:
                return np.ndarray(shape, x.dtype, x, 0, (0,) * len(shape))
            lead = len(shape) - x.ndim
            strides = (0,) * lead + tuple(0 if n == 1 and s != 1 else st
                                          for n, s, st in zip(x.shape, shape[lead:], x.strides))
            try:
                return np.ndarray(shape, x.dtype, x, 0, strides)
            except (TypeError, ValueError):  # x does not export a contiguous buffer
                return np.broadcast_to(x, shape)

        def reshape(x, shape):
            return x.reshape(shape)  # the method: np.reshape's argument handling costs ~0.6 us a call

        def view(x, shape):
            if x.flags.c_contiguous:  # always a view: the copy=False keyword alone costs ~0.4 us a call
                return x.reshape(shape)
            return x.reshape(shape, copy=False)  # (raises ValueError where only a copy would do)

        def argmax(x, axis=None, keepdims=False):
            return x.argmax(axis, keepdims=keepdims)  # the method: np.argmax's wrapper costs ~1 us a call

        def argmin(x, axis=None, keepdims=False):
            return x.argmin(axis, keepdims=keepdims)

        shared_stack = self.kernels["stack"]

        def stack(arrays, axis):
            # along the first axis one array built from the list: np.stack reshapes and checks each array in
            # Python (200 0-d arrays: ~100 us -> ~5 us); the arrays are of one shape and dtype here
            if axis == 0:
                return np.array(arrays, dtype=arrays[0].dtype)
            return shared_stack(arrays, axis)

        # add/sub/mul/div stay the bare ufuncs: a Python wrapper deciding whether to split would cost the
        # small ops ~0.15 us a call (bench/bench_core.py); the split kernels are ember_cpu_numpy.threads
        own = {"sum": sum_, "mean": mean, "relu": relu, "relu_backward": relu_backward, "expand": expand,
               "reshape": reshape, "view": view, "argmax": argmax, "argmin": argmin,
               "stack": stack, "tanh_backward": tanh_backward, "sigmoid_backward": sigmoid_backward,
               **sampling.KERNELS}  # PyTorch's CPU sampling on its mt19937 stream
        return {**own, **fastmath.overrides({**self.kernels, **own})}  # float32 forms over the kernels above


@ember.plugins.hookimpl
def ember_backends(registry):
    registry.add_backend(NumpyBackend())

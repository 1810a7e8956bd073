"""Fused CUDA kernels for the hot pointwise chains: one pass over memory instead of one per NumPy
operation.  Each entry replaces the shared kernel of the same name and signature; cases a fused
kernel does not cover fall back to the shared one.

* ``relu_backward``: ``g`` where ``out > 0`` (or nan), else 0, in one kernel.
* ``sgd_update``, ``adam_update`` (Adam, AdamW, AMSGrad), ``adagrad_update``, ``rmsprop_update``
  (not centered): the whole update of one parameter, in place, in one kernel; the arithmetic
  follows PyTorch's single-tensor update.
* ``softmax``, ``log_softmax``: cuDNN's softmax where CuPy has cuDNN, else exp and normalise fused.

The fused kernels take float32 and float64 arrays of one dtype; other dtypes (float16, whose CUDA
type mixes ambiguously with ``float`` in these expressions, complex, mixed state dtypes) use the
shared kernels.
"""
from __future__ import annotations

# Adam: the effective gradient, the moments (two-sided lerp as PyTorch's), then the step.
_ADAM_BODY = """
T grad = maximize ? -g : g;
if (decoupled) { p = p * (1 - lr * wd); } else if (wd != 0) { grad = grad + wd * p; }
T w = 1 - beta1;
m = w < 0.5 ? m + w * (grad - m) : grad - (grad - m) * (1 - w);
v = v * beta2 + (1 - beta2) * (grad * grad);
"""

_SGD_GRAD = """
T grad = maximize ? -g : g;
if (wd != 0) { grad = grad + wd * p; }
"""
_SGD_MOMENTUM = """
buf = buf * momentum + (1 - dampening) * grad;
grad = nesterov ? grad + momentum * buf : buf;
"""

_ADAGRAD_BODY = """
T grad = maximize ? -g : g;
if (wd != 0) { grad = grad + wd * p; }
total = total + grad * grad;
p = p - clr * (grad / (sqrt(total) + eps));
"""

_RMSPROP_BODY = """
T grad = maximize ? -g : g;
if (wd != 0) { grad = grad + wd * p; }
sq = sq * alpha + (1 - alpha) * (grad * grad);
T avg = sqrt(sq) + eps;
"""

# cudnnSoftmaxAlgorithm_t
_SOFTMAX_ACCURATE, _SOFTMAX_LOG = 1, 2
# dtype characters of the fused kernels (float32, float64) and of cuDNN's softmax (float16 too)
_FUSED, _CUDNN = "fd", "efd"


def _fusable(first, *others) -> bool:
    """Whether the fused kernels take these arrays: all float32 or all float64 (None entries skipped)."""
    t = first.dtype
    return t.char in _FUSED and all(a is None or a.dtype == t for a in others)


def kernels(cp, shared: dict) -> dict:
    """The fused overrides for CuPy module ``cp``; ``shared`` is the shared kernel table (the fallbacks)."""
    shared = dict(shared)  # a snapshot: the backend's table will hold these overrides under the same names
    adam_params = "T g, T lr, T wd, T beta1, T beta2, T eps, T step_size, T bc2_sqrt, bool decoupled, bool maximize"
    adam = cp.ElementwiseKernel(
        adam_params, "T p, T m, T v",
        _ADAM_BODY + "p = p - step_size * (m / (sqrt(v) / bc2_sqrt + eps));", "ember_adam")
    amsgrad = cp.ElementwiseKernel(
        adam_params, "T p, T m, T v, T vmax",
        _ADAM_BODY + "vmax = max(vmax, v); p = p - step_size * (m / (sqrt(vmax) / bc2_sqrt + eps));",
        "ember_amsgrad")
    sgd_params = "T g, T lr, T wd, T momentum, T dampening, bool nesterov, bool maximize"
    sgd_plain = cp.ElementwiseKernel(sgd_params, "T p", _SGD_GRAD + "p = p - lr * grad;", "ember_sgd")
    sgd_momentum = cp.ElementwiseKernel(sgd_params, "T p, T buf", _SGD_GRAD + _SGD_MOMENTUM + "p = p - lr * grad;",
                                        "ember_sgd_momentum")
    adagrad = cp.ElementwiseKernel("T g, T clr, T wd, T eps, bool maximize", "T p, T total", _ADAGRAD_BODY,
                                   "ember_adagrad")
    rms_params = "T g, T lr, T alpha, T eps, T wd, T momentum, bool maximize"
    rmsprop = cp.ElementwiseKernel(rms_params, "T p, T sq", _RMSPROP_BODY + "p = p - lr * (grad / avg);",
                                   "ember_rmsprop")
    rmsprop_momentum = cp.ElementwiseKernel(
        rms_params, "T p, T sq, T buf", _RMSPROP_BODY + "buf = buf * momentum + grad / avg; p = p - lr * buf;",
        "ember_rmsprop_momentum")
    relu_bw = cp.ElementwiseKernel("T g, U out", "T y", "y = out <= 0 ? (T)0 : g", "ember_relu_backward")
    exp_shift = cp.ElementwiseKernel("T x, T mx", "T y", "y = exp(x - mx)", "ember_exp_shift")
    log_norm = cp.ElementwiseKernel("T x, T mx, T s", "T y", "y = x - mx - log(s)", "ember_log_norm")

    def adam_update(p, g, m, v, vmax, step, lr, beta1, beta2, eps, weight_decay, decoupled, maximize):
        if not _fusable(p, g, m, v, vmax):
            return shared["adam_update"](p, g, m, v, vmax, step, lr, beta1, beta2, eps, weight_decay, decoupled,
                                         maximize)
        step_size = lr / (1 - beta1 ** step)
        bc2_sqrt = (1 - beta2 ** step) ** 0.5
        args = (g, lr, weight_decay, beta1, beta2, eps, step_size, bc2_sqrt, bool(decoupled), bool(maximize))
        if vmax is None:
            adam(*args, p, m, v)
        else:
            amsgrad(*args, p, m, v, vmax)

    def sgd_update(p, g, buf, lr, weight_decay, momentum, dampening, nesterov, maximize):
        if momentum != 0 and buf is None or not _fusable(p, g, buf):
            # the first momentum step starts the buffer from the gradient itself
            return shared["sgd_update"](p, g, buf, lr, weight_decay, momentum, dampening, nesterov, maximize)
        args = (g, lr, weight_decay, momentum, dampening, bool(nesterov), bool(maximize))
        if momentum == 0:
            sgd_plain(*args, p)
        else:
            sgd_momentum(*args, p, buf)
        return buf

    def adagrad_update(p, g, total, step, lr, lr_decay, eps, weight_decay, maximize):
        if not _fusable(p, g, total):
            return shared["adagrad_update"](p, g, total, step, lr, lr_decay, eps, weight_decay, maximize)
        adagrad(g, lr / (1 + (step - 1) * lr_decay), weight_decay, eps, bool(maximize), p, total)

    def rmsprop_update(p, g, sq, gavg, buf, lr, alpha, eps, weight_decay, momentum, maximize):
        if gavg is not None or not _fusable(p, g, sq, buf):  # centered: the shared kernel
            return shared["rmsprop_update"](p, g, sq, gavg, buf, lr, alpha, eps, weight_decay, momentum, maximize)
        args = (g, lr, alpha, eps, weight_decay, momentum, bool(maximize))
        if buf is None:
            rmsprop(*args, p, sq)
        else:
            rmsprop_momentum(*args, p, sq, buf)

    def relu_backward(g, out):
        if not _fusable(g, out):
            return shared["relu_backward"](g, out)
        return relu_bw(g, out)

    cudnn = _cudnn(cp)

    def by_cudnn(x):
        return cudnn is not None and x.dtype.char in _CUDNN and x.size > 0 and x.ndim > 0

    def softmax(x, axis):
        if by_cudnn(x):
            return cudnn.softmax_forward(cp.ascontiguousarray(x), axis % x.ndim, _SOFTMAX_ACCURATE)
        if not _fusable(x):
            return shared["softmax"](x, axis)
        e = exp_shift(x, x.max(axis=axis, keepdims=True))
        e /= e.sum(axis=axis, keepdims=True)
        return e

    def log_softmax(x, axis):
        if by_cudnn(x):
            return cudnn.softmax_forward(cp.ascontiguousarray(x), axis % x.ndim, _SOFTMAX_LOG)
        if not _fusable(x):
            return shared["log_softmax"](x, axis)
        mx = x.max(axis=axis, keepdims=True)
        return log_norm(x, mx, exp_shift(x, mx).sum(axis=axis, keepdims=True))

    return {"adam_update": adam_update, "sgd_update": sgd_update, "adagrad_update": adagrad_update,
            "rmsprop_update": rmsprop_update, "relu_backward": relu_backward,
            "softmax": softmax, "log_softmax": log_softmax}


def _cudnn(cp):
    """CuPy's cuDNN wrappers (``cupyx.cudnn``), or None where CuPy has no usable cuDNN.

    Importing ``cupy.cuda.cudnn`` fails where CuPy was built without cuDNN, and asking it for the
    library version fails where libcudnn cannot be loaded (CuPy wheels load it at run time).
    """
    try:
        from cupy.cuda import cudnn as libcudnn
        from cupyx import cudnn

        libcudnn.getVersion()
    except Exception:  # noqa: BLE001 - a missing or broken libcudnn only means "use the shared kernels"
        return None
    return cudnn

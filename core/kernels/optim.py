"""Optimizer update kernels: one in-place update rule per optimizer, on one parameter's arrays.

Each kernel takes the parameter ``p``, its gradient ``g`` and its state arrays, updates ``p`` and the
state in place and never writes ``g``.  The order of operations follows PyTorch's single-tensor
updates, so float32 trajectories agree with it to rounding.  A backend may replace any entry with a
fused kernel (one pass over memory) under the same name and signature.  Only array-API operations
and in-place arithmetic are used, so any array-API library serves.

Every rule is elementwise, so on a backend with a block runner (the CPU's) a large parameter is updated block by
block (:data:`BLOCK` elements of each array at a time, the blocks on the runner): a rule's several passes and
temporaries then stay in cache, where over whole arrays each pass would go out to memory.  Each element goes through the
same arithmetic either way, so the result is bit-identical.
"""
from __future__ import annotations

from .strategy import Strategy, spans


# the positions of the arrays each update writes: the parameter and its state, never the gradient
MUTATING = {"sgd_update": (0, 2), "adam_update": (0, 2, 3, 4), "adamax_update": (0, 2, 3), "nadam_update": (0, 2, 3),
            "radam_update": (0, 2, 3), "rmsprop_update": (0, 2, 3, 4), "adagrad_update": (0, 2),
            "adadelta_update": (0, 2, 3)}


BLOCK = 1 << 16
"""Elements of each array a blocked update works on at a time: a block of SGD's four arrays (parameter,
gradient, momentum, temporary) fills a core's 1 MiB L2 cache; smaller blocks cost more in per-call overhead
than they save.  Over ResNet-18's parameters from a cold cache, 2 threads: SGD with momentum 6.1 ms (7.5
unblocked), Adam 14.1 ms (24.0 unblocked); blocks of 2^15 give 6.9 and 16.1."""


def kernels(xp, strategy=None) -> dict:
    s = strategy or Strategy(xp)
    in_blocks = s.blocked

    def blocked(rule):
        """``rule`` run block by block over the flattened arrays when they are large, contiguous arrays of the
        parameter's shape and the backend has a block runner (scalars and ``None`` go to every block as they
        are), the blocks on the runner."""
        def kernel(p, *rest):
            if not in_blocks or p.size <= BLOCK or not p.flags.c_contiguous:
                return rule(p, *rest)
            at = [i for i, a in enumerate(rest) if isinstance(a, xp.ndarray) and a.ndim]
            if any(rest[i].shape != p.shape or not rest[i].flags.c_contiguous for i in at):
                return rule(p, *rest)
            flat = p.reshape(-1)
            arrays = [rest[i].reshape(-1) for i in at]

            def update(part):
                args = list(rest)
                for i, a in zip(at, arrays):
                    args[i] = a[part]
                rule(flat[part], *args)

            s.each(update, spans(flat.size, BLOCK), flat.size)

        return kernel

    def _grad(p, g, weight_decay, maximize):
        # the effective gradient: never written in place (it is the user's .grad)
        if maximize:
            g = -g
        if weight_decay != 0:
            g = g + weight_decay * p
        return g

    def _decay(p, g, lr, weight_decay, decoupled, maximize):
        # AdamW-style decay shrinks the parameter; L2 decay adds to the gradient
        if decoupled:
            p *= 1 - lr * weight_decay
            return _grad(p, g, 0, maximize)
        return _grad(p, g, weight_decay, maximize)

    def _lerp_(a, b, w):
        # a.lerp_(b, w) with PyTorch's two-sided formula (in place where it may: one temporary, not two)
        if w < 0.5:
            t = b - a
            t *= w
            a += t
        else:
            a[...] = b - (b - a) * (1 - w)

    def _moments_(m, v, g, beta1, beta2):
        # Adam-family first and second moments
        _lerp_(m, g, 1 - beta1)
        v *= beta2
        t = g * g
        t *= 1 - beta2
        v += t

    def _sgd(p, g, buf, first, lr, weight_decay, momentum, dampening, nesterov, maximize):
        g = _grad(p, g, weight_decay, maximize)
        if momentum != 0:
            if first:
                buf[...] = g
            else:
                buf *= momentum
                buf += g if dampening == 0 else (1 - dampening) * g  # no temporary in the common case
            g = g + momentum * buf if nesterov else buf
        p -= lr * g

    _sgd_blocked = blocked(_sgd)

    def sgd_update(p, g, buf, lr, weight_decay, momentum, dampening, nesterov, maximize):
        first = momentum != 0 and buf is None
        if first:  # the first step: the buffer starts as the gradient
            buf = xp.empty_like(g)
        _sgd_blocked(p, g, buf, first, lr, weight_decay, momentum, dampening, nesterov, maximize)
        return buf

    def adam_update(p, g, m, v, vmax, step, lr, beta1, beta2, eps, weight_decay, decoupled, maximize):
        g = _decay(p, g, lr, weight_decay, decoupled, maximize)
        _moments_(m, v, g, beta1, beta2)
        bc2_sqrt = (1 - beta2 ** step) ** 0.5
        step_size = lr / (1 - beta1 ** step)
        if vmax is not None:
            vmax[...] = xp.maximum(vmax, v)
            v = vmax
        denom = xp.sqrt(v)  # (sqrt(v) / bc2_sqrt + eps, then step_size * (m / denom), the temporaries reused)
        denom /= bc2_sqrt
        denom += eps
        d = m / denom
        d *= step_size
        p -= d

    def adamax_update(p, g, m, u, step, lr, beta1, beta2, eps, weight_decay, maximize):
        g = _grad(p, g, weight_decay, maximize)
        _lerp_(m, g, 1 - beta1)
        u *= beta2
        u[...] = xp.maximum(u, xp.abs(g) + eps)
        p -= (lr / (1 - beta1 ** step)) * (m / u)

    def nadam_update(p, g, m, v, step, mu, mu_product, mu_next, lr, beta1, beta2, eps, weight_decay,
                     decoupled, maximize):
        g = _decay(p, g, lr, weight_decay, decoupled, maximize)
        _moments_(m, v, g, beta1, beta2)
        denom = xp.sqrt(v / (1 - beta2 ** step)) + eps
        p += (-lr * (1.0 - mu) / (1.0 - mu_product)) * (g / denom)
        p += (-lr * mu_next / (1.0 - mu_product * mu_next)) * (m / denom)

    def radam_update(p, g, m, v, step, lr, beta1, beta2, eps, weight_decay, decoupled, maximize):
        g = _decay(p, g, lr, weight_decay, decoupled, maximize)
        _moments_(m, v, g, beta1, beta2)
        bc1 = 1 - beta1 ** step
        bc2 = 1 - beta2 ** step
        m_hat = m / bc1
        rho_inf = 2 / (1 - beta2) - 1
        rho_t = rho_inf - 2 * step * (beta2 ** step) / bc2
        if rho_t > 5.0:
            rect = ((rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t)) ** 0.5
            adaptive = (bc2 ** 0.5) / (xp.sqrt(v) + eps)
            p -= m_hat * lr * adaptive * rect
        else:
            p -= m_hat * lr

    def rmsprop_update(p, g, sq, gavg, buf, lr, alpha, eps, weight_decay, momentum, maximize):
        g = _grad(p, g, weight_decay, maximize)
        sq *= alpha
        sq += (1 - alpha) * (g * g)
        if gavg is not None:
            _lerp_(gavg, g, 1 - alpha)
            avg = xp.sqrt(sq - gavg * gavg)
        else:
            avg = xp.sqrt(sq)
        avg += eps
        if buf is not None:
            buf *= momentum
            buf += g / avg
            p -= lr * buf
        else:
            p -= lr * (g / avg)

    def adagrad_update(p, g, total, step, lr, lr_decay, eps, weight_decay, maximize):
        g = _grad(p, g, weight_decay, maximize)
        total += g * g
        clr = lr / (1 + (step - 1) * lr_decay)
        p -= clr * (g / (xp.sqrt(total) + eps))

    def adadelta_update(p, g, sq, acc, lr, rho, eps, weight_decay, maximize):
        g = _grad(p, g, weight_decay, maximize)
        sq *= rho
        sq += (1 - rho) * (g * g)
        delta = xp.sqrt(acc + eps) / xp.sqrt(sq + eps) * g
        acc *= rho
        acc += (1 - rho) * (delta * delta)
        p -= lr * delta

    return {
        "sgd_update": sgd_update,
        "adam_update": blocked(adam_update),
        "adamax_update": blocked(adamax_update),
        "nadam_update": blocked(nadam_update),
        "radam_update": blocked(radam_update),
        "rmsprop_update": blocked(rmsprop_update),
        "adagrad_update": blocked(adagrad_update),
        "adadelta_update": blocked(adadelta_update),
    }

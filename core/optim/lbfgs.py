"""L-BFGS with an optional strong-Wolfe line search (PyTorch's algorithm, after minFunc).

The search works on one flat vector of all parameters, held as a backend array; the closure
re-evaluates the model.
"""
from __future__ import annotations

import functools
from typing import Callable

from ..autograd.grad_mode import enable_grad, no_grad
from ..tensor import _wrap
from .optimizer import Optimizer, check_range


def _cubic_interpolate(x1, f1, g1, x2, f2, g2, bounds=None):
    # minimiser of the cubic through (x1, f1, g1) and (x2, f2, g2), clipped to the bounds
    xmin_bound, xmax_bound = bounds if bounds is not None else ((x1, x2) if x1 <= x2 else (x2, x1))
    d1 = g1 + g2 - 3 * (f1 - f2) / (x1 - x2)
    d2_square = d1 ** 2 - g1 * g2
    if d2_square < 0:
        return (xmin_bound + xmax_bound) / 2.0
    d2 = d2_square ** 0.5
    if x1 <= x2:
        min_pos = x2 - (x2 - x1) * ((g2 + d2 - d1) / (g2 - g1 + 2 * d2))
    else:
        min_pos = x1 - (x1 - x2) * ((g1 + d2 - d1) / (g1 - g2 + 2 * d2))
    return min(max(min_pos, xmin_bound), xmax_bound)


def _strong_wolfe(xp, obj_func, t, d, f, g, gtd, c1=1e-4, c2=0.9, tolerance_change=1e-9, max_ls=25):
    """Line search along ``d`` from step ``t``: returns ``(f_new, g_new, t, evaluations)``."""
    d_norm = float(xp.max(xp.abs(d)))
    f_new, g_new = obj_func(t, d)
    evals = 1
    gtd_new = float(g_new @ d)
    t_prev, f_prev, g_prev, gtd_prev = 0, f, g, gtd
    done = False
    ls_iter = 0
    # bracket an interval containing a point satisfying the Wolfe criteria
    while ls_iter < max_ls:
        if f_new > (f + c1 * t * gtd) or (ls_iter > 1 and f_new >= f_prev):
            bracket, bracket_f, bracket_g, bracket_gtd = [t_prev, t], [f_prev, f_new], [g_prev, g_new], [gtd_prev,
                                                                                                         gtd_new]
            break
        if abs(gtd_new) <= -c2 * gtd:
            bracket, bracket_f, bracket_g = [t], [f_new], [g_new]
            done = True
            break
        if gtd_new >= 0:
            bracket, bracket_f, bracket_g, bracket_gtd = [t_prev, t], [f_prev, f_new], [g_prev, g_new], [gtd_prev,
                                                                                                         gtd_new]
            break
        min_step, max_step = t + 0.01 * (t - t_prev), t * 10
        tmp = t
        t = _cubic_interpolate(t_prev, f_prev, gtd_prev, t, f_new, gtd_new, bounds=(min_step, max_step))
        t_prev, f_prev, g_prev, gtd_prev = tmp, f_new, g_new, gtd_new
        f_new, g_new = obj_func(t, d)
        evals += 1
        gtd_new = float(g_new @ d)
        ls_iter += 1
    if ls_iter == max_ls:
        bracket, bracket_f, bracket_g = [0, t], [f, f_new], [g, g_new]
    # zoom: shrink the bracket until a point satisfies the Wolfe criteria
    insuf_progress = False
    low, high = (0, 1) if bracket_f[0] <= bracket_f[-1] else (1, 0)
    while not done and ls_iter < max_ls:
        if abs(bracket[1] - bracket[0]) * d_norm < tolerance_change:
            break
        t = _cubic_interpolate(bracket[0], bracket_f[0], bracket_gtd[0], bracket[1], bracket_f[1], bracket_gtd[1])
        eps = 0.1 * (max(bracket) - min(bracket))
        if min(max(bracket) - t, t - min(bracket)) < eps:
            if insuf_progress or t >= max(bracket) or t <= min(bracket):
                t = max(bracket) - eps if abs(t - max(bracket)) < abs(t - min(bracket)) else min(bracket) + eps
                insuf_progress = False
            else:
                insuf_progress = True
        else:
            insuf_progress = False
        f_new, g_new = obj_func(t, d)
        evals += 1
        gtd_new = float(g_new @ d)
        ls_iter += 1
        if f_new > (f + c1 * t * gtd) or f_new >= bracket_f[low]:
            bracket[high], bracket_f[high], bracket_g[high], bracket_gtd[high] = t, f_new, g_new, gtd_new
            low, high = (0, 1) if bracket_f[0] <= bracket_f[1] else (1, 0)
        else:
            if abs(gtd_new) <= -c2 * gtd:
                done = True
            elif gtd_new * (bracket[high] - bracket[low]) >= 0:
                bracket[high], bracket_f[high] = bracket[low], bracket_f[low]
                bracket_g[high], bracket_gtd[high] = bracket_g[low], bracket_gtd[low]
            bracket[low], bracket_f[low], bracket_g[low], bracket_gtd[low] = t, f_new, g_new, gtd_new
    return bracket_f[low], bracket_g[low], bracket[low], evals


class LBFGS(Optimizer):
    """Limited-memory BFGS; ``step(closure)`` runs up to ``max_iter`` iterations (one group only).

    >>> import ember
    >>> w = ember.zeros(2, requires_grad=True)
    >>> opt = ember.optim.LBFGS([w], line_search_fn="strong_wolfe")
    >>> def closure():
    ...     opt.zero_grad(); loss = ((w - 3) * (w - 3)).sum(); loss.backward(); return loss
    >>> _ = opt.step(closure); [round(v, 3) for v in w.tolist()]
    [3.0, 3.0]
    """

    def __init__(self, params, lr: float = 1, max_iter: int = 20, max_eval: int | None = None,
                 tolerance_grad: float = 1e-7, tolerance_change: float = 1e-9, history_size: int = 100,
                 line_search_fn: str | None = None):
        check_range("learning rate", lr)
        if line_search_fn not in (None, "strong_wolfe"):
            raise ValueError(f"LBFGS: only 'strong_wolfe' is supported as line_search_fn, got {line_search_fn!r}")
        if max_eval is None:
            max_eval = max_iter * 5 // 4
        defaults = dict(lr=lr, max_iter=max_iter, max_eval=max_eval, tolerance_grad=tolerance_grad,
                        tolerance_change=tolerance_change, history_size=history_size, line_search_fn=line_search_fn)
        super().__init__(params, defaults)
        if len(self.param_groups) != 1:
            raise ValueError("LBFGS doesn't support per-parameter options (parameter groups)")
        self._params = self.param_groups[0]["params"]

    def add_param_group(self, param_group: dict) -> None:
        if self.param_groups:
            raise ValueError("LBFGS doesn't support per-parameter options (parameter groups)")
        super().add_param_group(param_group)

    @property
    def _xp(self):
        return self._params[0]._dev.backend.xp

    def _gather_flat_grad(self):
        xp, k = self._xp, self._params[0]._dev.kernels
        return k["cat"]([xp.zeros((p.numel(),), dtype=p._data.dtype) if p._grad is None
                         else xp.reshape(p._grad._data, (-1,)) for p in self._params], 0)

    def _add_grad(self, step_size, update) -> None:
        offset, xp = 0, self._xp
        for p in self._params:
            n = p.numel()
            p._data += step_size * xp.reshape(update[offset:offset + n], p._data.shape)
            p._bump()
            offset += n

    def _set_param(self, arrays) -> None:
        for p, a in zip(self._params, arrays):
            p._data[...] = a
            p._bump()

    def _directional_evaluate(self, closure, x, t, d):
        self._add_grad(t, d)
        with enable_grad():
            loss = float(closure())
        flat_grad = self._gather_flat_grad()
        self._set_param(x)
        return loss, flat_grad

    def step(self, closure: Callable):
        """Run the L-BFGS iterations; ``closure`` clears the gradients, computes the loss and backpropagates."""
        if closure is None:
            raise RuntimeError("LBFGS.step() requires a closure that reevaluates the model and returns the loss")
        return super().step(closure)

    def _step(self, closure=None):
        self._validate()
        with no_grad():
            return self._iterate(closure)

    def _iterate(self, closure):
        xp, group = self._xp, self.param_groups[0]
        lr, max_iter, max_eval = group["lr"], group["max_iter"], group["max_eval"]
        tolerance_grad, tolerance_change = group["tolerance_grad"], group["tolerance_change"]
        history_size = group["history_size"]
        dev = self._params[0]._dev
        state = self.state.setdefault(self._params[0], {})
        state.setdefault("func_evals", 0)
        state.setdefault("n_iter", 0)

        with enable_grad():
            orig_loss = closure()
        loss = float(orig_loss)
        current_evals = 1
        state["func_evals"] += 1
        flat_grad = self._gather_flat_grad()
        if float(xp.max(xp.abs(flat_grad))) <= tolerance_grad:
            return orig_loss

        arr = lambda key: None if state.get(key) is None else state[key]._data  # noqa: E731
        d, t, prev_flat_grad = arr("d"), state.get("t"), arr("prev_flat_grad")
        old_dirs = [v._data for v in state.get("old_dirs", [])]
        old_stps = [v._data for v in state.get("old_stps", [])]
        ro, H_diag, prev_loss = list(state.get("ro", [])), state.get("H_diag"), state.get("prev_loss")
        n_iter = 0
        while n_iter < max_iter:
            n_iter += 1
            state["n_iter"] += 1
            if state["n_iter"] == 1:
                d = -flat_grad
                old_dirs, old_stps, ro, H_diag = [], [], [], 1
            else:
                y = flat_grad - prev_flat_grad
                s = d * t
                ys = float(y @ s)
                if ys > 1e-10:
                    if len(old_dirs) == history_size:
                        old_dirs.pop(0)
                        old_stps.pop(0)
                        ro.pop(0)
                    old_dirs.append(y)
                    old_stps.append(s)
                    ro.append(1.0 / ys)
                    H_diag = ys / float(y @ y)
                # two-loop recursion: d = -H g
                al = [0.0] * len(old_dirs)
                q = -flat_grad
                for i in range(len(old_dirs) - 1, -1, -1):
                    al[i] = float(old_stps[i] @ q) * ro[i]
                    q -= al[i] * old_dirs[i]
                d = r = q * H_diag
                for i in range(len(old_dirs)):
                    be_i = float(old_dirs[i] @ r) * ro[i]
                    r += (al[i] - be_i) * old_stps[i]
            prev_flat_grad = dev.kernels["copy"](flat_grad)
            prev_loss = loss
            t = min(1.0, 1.0 / float(xp.sum(xp.abs(flat_grad)))) * lr if state["n_iter"] == 1 else lr
            gtd = float(flat_grad @ d)
            if gtd > -tolerance_change:
                break
            if group["line_search_fn"] is not None:
                x_init = [dev.kernels["copy"](p._data) for p in self._params]
                loss, flat_grad, t, ls_evals = _strong_wolfe(
                    xp, functools.partial(self._directional_evaluate, closure, x_init), t, d, loss, flat_grad, gtd,
                    max_ls=max_eval - current_evals)
                self._add_grad(t, d)
                opt_cond = float(xp.max(xp.abs(flat_grad))) <= tolerance_grad
            else:
                self._add_grad(t, d)
                ls_evals = 0
                opt_cond = False
                if n_iter != max_iter:
                    with enable_grad():
                        loss = float(closure())
                    flat_grad = self._gather_flat_grad()
                    opt_cond = float(xp.max(xp.abs(flat_grad))) <= tolerance_grad
                    ls_evals = 1
            current_evals += ls_evals
            state["func_evals"] += ls_evals
            if n_iter == max_iter or current_evals >= max_eval or opt_cond:
                break
            if float(xp.max(xp.abs(d * t))) <= tolerance_change or abs(loss - prev_loss) < tolerance_change:
                break

        wrap = lambda a: _wrap(a, dev)  # noqa: E731
        state.update(d=wrap(d), t=t, old_dirs=[wrap(a) for a in old_dirs], old_stps=[wrap(a) for a in old_stps],
                     ro=ro, H_diag=H_diag, prev_flat_grad=wrap(prev_flat_grad), prev_loss=prev_loss)
        return orig_loss

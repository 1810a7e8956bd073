"""Recurrent kernels: one layer in one direction over a whole sequence, forward and backward.

The forward projects the input of every step in one GEMM (per gate), then runs
the time loop: per step one recurrent GEMM and the gate arithmetic, written
into preallocated buffers.  The backward runs the loop in reverse collecting
the gate gradients of every step in one array, so that the weight gradients,
the bias gradients and the input gradient are one GEMM (or one sum) each
afterwards.

The gate activations are kept gate-major: ``A[k, t]`` is gate ``k`` of step
``t``, one contiguous ``(B, H)`` block, so that every elementwise operation of
a step runs over contiguous memory (NumPy's loops over a gate's slice of a
``(B, 4H)`` row block cost about three times as much).  The GEMMs keep one
call per step (a BLAS call has a fixed cost, more so with threads): a step's
recurrent product ``(B, 4H)`` is read through a gate-major view, and the gate
gradients are written into ``(T, B, 4H)`` rows.  Where the array library has
ufuncs (NumPy, CuPy) the arithmetic writes in place (``out=``); for other array
libraries the same code assigns into the buffers.

The large buffers (gate activations, states, gate gradients, weight gradients) come from the backend's
allocator (:mod:`ember.kernels.strategy`): on the CPU, pages reused from earlier calls rather than faulted
in fresh each time.

``mask`` (T, B, 1), when given, is 1 where a sequence is still running: a
finished sequence keeps its state and outputs zeros (packed sequences).
"""
from __future__ import annotations

from types import SimpleNamespace

from .strategy import Strategy, is_ufunc

QUIET = {"lstm_forward", "lstm_backward", "gru_forward", "gru_backward", "rnn_forward", "rnn_backward"}


def _helpers(xp, s) -> SimpleNamespace:
    """The buffers and in-place arithmetic the recurrent kernels share, for ``xp`` and the backend's
    strategy ``s``."""
    empty = s.empty  # the backend's allocator: on the CPU reused pages, no page faults for every call's buffers

    if s.writes_out:
        if all(is_ufunc(fn) for fn in (xp.subtract, xp.multiply, xp.tanh, xp.matmul)):
            # the ufuncs themselves, the output positional: the time loops make ~16 of these calls a step,
            # and a Python wrapper and a keyword cost about a fifth of a small call
            add, sub, mul, tanh, mm = xp.add, xp.subtract, xp.multiply, xp.tanh, xp.matmul
        else:
            def add(a, b, out):
                xp.add(a, b, out=out)

            def sub(a, b, out):
                xp.subtract(a, b, out=out)

            def mul(a, b, out):
                xp.multiply(a, b, out=out)

            def tanh(a, out):
                xp.tanh(a, out=out)

            def mm(a, b, out):
                xp.matmul(a, b, out=out)

        def relu_into(a, out):
            xp.maximum(a, 0, out=out)

        def product(a, b):
            """``a @ b`` (2-D) into an allocated buffer."""
            out = empty((a.shape[0], b.shape[1]), a.dtype)
            xp.matmul(a, b, out=out)
            return out
    else:
        def add(a, b, out):
            out[...] = a + b

        def sub(a, b, out):
            out[...] = a - b

        def mul(a, b, out):
            out[...] = a * b

        def tanh(a, out):
            out[...] = xp.tanh(a)

        def mm(a, b, out):
            out[...] = xp.matmul(a, b)

        def relu_into(a, out):
            out[...] = xp.maximum(a, 0)

        def product(a, b):
            return xp.matmul(a, b)

    def copy(a):
        out = empty(tuple(a.shape), a.dtype)
        out[...] = a
        return out

    def steps(T, reverse):
        return range(T - 1, -1, -1) if reverse else range(T)

    def keep(m, new, old):
        return new if m is None else m * new + (1 - m) * old

    def mask_step(d, carry, m):
        """One step back through a packed batch: ``d`` takes what finished sequences carried past the later
        steps, keeps (in place) the part of the sequences still running at this step (mask 1), and returns
        the rest, which passes this step by."""
        if carry is not None:
            add(d, carry, d)
        carry = (1 - m) * d
        mul(d, m, d)
        return carry

    def gate_major(w, order, scale=None):
        """``(G*H, n)`` weights (or a ``(G*H,)`` bias) as ``(G, H, n)`` (``(G, H)``) in gate ``order``, block
        ``j`` times ``scale[j]`` where given (``(G, 1, 1)``)."""
        G = len(order)
        src = xp.reshape(w, (G, w.shape[0] // G) + tuple(w.shape[1:]))
        out = xp.take(src, xp.asarray(order), axis=0)  # one call: the blocks in order
        if scale is not None:
            mul(out, scale if src.ndim == 3 else scale[:, 0, ...], out)
        return out

    def pytorch_order(a, back):
        """Gate-major ``(G, H, ...)`` back to PyTorch's packed ``(G*H, ...)`` rows."""
        return xp.reshape(xp.take(a, xp.asarray(back), axis=0), (a.shape[0] * a.shape[1],) + tuple(a.shape[2:]))

    def project(x, w_ih, bias, order, scale):
        """The input projection of every step, gate-major ``(G, T, B, H)``: ``scale * (x W_ih^T + bias)``
        with ``bias`` gate-major ``(G, H)`` (or None) and ``scale`` ``(G, 1, 1)`` (or None).

        With several gates and in-place arithmetic the result is a view of time-major memory
        ``(T, G, B, H)``: a step's gates ``A[:, t]`` are one contiguous block (as is each gate's ``A[k, t]``),
        so a step's elementwise calls run over contiguous memory: on small steps, where a call's fixed cost
        is all there is, about a fifth of the cost of a strided view's."""
        T, B, n = x.shape
        w = gate_major(w_ih, order, scale)
        G, H = w.shape[0], w.shape[1]
        if bias is not None:
            bias = xp.reshape(bias, (G, 1, H))
            bias = bias if scale is None else bias * scale
        x2 = xp.reshape(x, (T * B, n))
        if G == 1 or not s.writes_out:
            A = empty((G, T * B, H), x.dtype)
            mm(x2, xp.swapaxes(w, 1, 2), A)  # one GEMM per gate
            if bias is not None:
                add(A, bias, A)
            return xp.reshape(A, (G, T, B, H))
        rows = product(x2, xp.reshape(w, (G * H, n)).T)  # (T * B, G * H): one GEMM
        if bias is not None:
            add(rows, xp.reshape(bias, (G * H,)), rows)
        A = by_gate(xp.reshape(rows, (T, B, G * H)), G)
        if B == 1:  # (T, G * H) is already time-major
            return A
        out = xp.transpose(empty((T, G, B, H), x.dtype), (1, 0, 2, 3))
        out[...] = A
        return out

    def packed_rows(w, order, scale=None):
        """``(G*H, n)`` weights with their gate blocks in ``order`` (each times ``scale[k]``), still packed."""
        return xp.reshape(gate_major(w, order, scale), w.shape)

    def by_gate(rows, G):
        """A ``(..., G*H)`` array as a gate-major ``(G, ..., H)`` view (a step's block: one strided view)."""
        n = rows.ndim
        split = xp.reshape(rows, tuple(rows.shape[:-1]) + (G, rows.shape[-1] // G))
        return xp.transpose(split, (n - 1,) + tuple(range(n - 1)) + (n,))

    def weight_grads(dG, x, w_ih, back, order, need_x):
        """``dW_ih``, ``db`` (PyTorch's row order) and, when ``need_x``, ``dx`` from the gradient ``dG``
        ``(T, B, G*H)`` of the projection (gate blocks in ``order``): one GEMM (or sum) each."""
        T, B, GH = dG.shape
        G = len(order)
        d2 = xp.reshape(dG, (T * B, GH))
        dw = pytorch_order(xp.reshape(product(d2.T, xp.reshape(x, (T * B, x.shape[-1]))), (G, GH // G, -1)), back)
        db = pytorch_order(xp.reshape(xp.sum(d2, axis=0), (G, GH // G)), back)
        dx = None
        if need_x:
            dx = xp.reshape(product(d2, packed_rows(w_ih, order)), x.shape)
        return dx, dw, db

    return SimpleNamespace(empty=empty, relu_into=relu_into, product=product, add=add, sub=sub, mul=mul,
                           tanh=tanh, mm=mm, copy=copy, steps=steps, keep=keep, mask_step=mask_step,
                           gate_major=gate_major, pytorch_order=pytorch_order, project=project,
                           packed_rows=packed_rows, by_gate=by_gate, weight_grads=weight_grads)


# ------------------------------------------------------------------ LSTM (gates i, f, g, o)
# The gates in the order (o, i, f, g): the three sigmoid gates are the slice A[:3] and the gates the cell
# gradient multiplies are A[1:].  A sigmoid is one tanh, sigmoid(z) = (1 + tanh(z / 2)) / 2, with the
# halving folded into the weights, so one tanh activates all four gates of a step.
LSTM_ORDER = (3, 0, 1, 2)  # (o, i, f, g) from PyTorch's (i, f, g, o)
LSTM_BACK = (1, 2, 3, 0)   # PyTorch's block j is internal block LSTM_BACK[j]


def _lstm(xp, h) -> dict:
    """LSTM: forward and backward over a whole sequence, on the shared helpers ``h``."""
    empty, product, add, sub, mul, tanh = h.empty, h.product, h.add, h.sub, h.mul, h.tanh
    mm, copy, steps, keep, mask_step, gate_major = h.mm, h.copy, h.steps, h.keep, h.mask_step, h.gate_major
    pytorch_order, project, packed_rows = h.pytorch_order, h.project, h.packed_rows
    by_gate, weight_grads = h.by_gate, h.weight_grads

    def lstm_forward(x, w_ih, w_hh, b_ih, b_hh, h0, c0, w_hr, mask, reverse):
        T, B, _ = x.shape
        H, P = w_hh.shape[0] // 4, w_hh.shape[1]
        dt = x.dtype
        half = xp.reshape(xp.asarray([0.5, 0.5, 0.5, 1.0], dtype=dt), (4, 1, 1))
        p5 = xp.asarray(0.5, dtype=dt)  # a 0-d array: a Python float costs a conversion every call
        bias = None if b_ih is None else gate_major(b_ih + b_hh, LSTM_ORDER)
        A = project(x, w_ih, bias, LSTM_ORDER, half)                         # (4, T, B, H)
        w_rec = packed_rows(w_hh, LSTM_ORDER, half).T                         # (P, 4H)
        w_hrT = None if w_hr is None else w_hr.T
        r = 1 if reverse else 0
        HB = empty((T + 1, B, P), dt)  # the h before step t is HB[t + r], the h after it HB[t + 1 - r]
        CB = empty((T + 1, B, H), dt)
        TC = empty((T, B, H), dt)      # tanh(c) of every step
        HP = None if w_hr is None else empty((T, B, H), dt)  # h before the projection
        out = None if mask is None else xp.zeros((T, B, P), dtype=dt)
        HB[r * T, ...] = h0
        CB[r * T, ...] = c0
        rec = xp.empty((B, 4 * H), dtype=dt)    # h W_hh^T of a step: one GEMM
        rec_g = by_gate(rec, 4)
        ig = xp.empty((B, H), dtype=dt)
        for t in steps(T, reverse):
            p, n = t + r, t + 1 - r
            a = A[:, t, ...]
            mm(HB[p, ...], w_rec, rec)
            add(a, rec_g, a)
            tanh(a, a)
            sig = a[:3, ...]
            mul(sig, p5, sig)
            add(sig, p5, sig)
            c_new, tc = CB[n, ...], TC[t, ...]
            mul(a[2, ...], CB[p, ...], c_new)
            mul(a[1, ...], a[3, ...], ig)
            add(c_new, ig, c_new)
            tanh(c_new, tc)
            if w_hr is None:
                mul(a[0, ...], tc, HB[n, ...])
            else:
                mul(a[0, ...], tc, HP[t, ...])
                mm(HP[t, ...], w_hrT, HB[n, ...])
            if mask is not None:
                m = mask[t, ...]
                out[t, ...] = m * HB[n, ...]
                HB[n, ...] = keep(m, HB[n, ...], HB[p, ...])
                CB[n, ...] = keep(m, c_new, CB[p, ...])
        if out is None:
            out = copy(HB[1 - r:T + 1 - r, ...])
        last = (1 - r) * T
        h, c = xp.array(HB[last, ...], copy=True), xp.array(CB[last, ...], copy=True)
        return out, h, c, (A, HB, CB, TC, HP)

    def lstm_backward(dout, dhT, dcT, cache, x, w_ih, w_hh, w_hr, mask, reverse, needs):
        """Gradients of ``x, w_ih, w_hh, b_ih, b_hh, h0, c0, w_hr``; ``needs`` says whether ``x``, ``h0``
        and ``c0`` want theirs (None where not)."""
        A, HB, CB, TC, HP = cache
        _, T, B, H = A.shape
        P = HB.shape[-1]
        dt = A.dtype
        r = 1 if reverse else 0
        # every factor of a gate's gradient that is known before the loop, in one pass over all steps:
        # dG[k, t] = (dc_t, or dh_t for o) * F[k, t], F = sigmoid' or tanh' of the gate times its partner.
        # F is written as the rows of dG (T, B, 4H), which the loop then multiplies in place: one GEMM takes
        # a step's rows, and no second array of that size is touched for the first time (page faults)
        dG = empty((T, B, 4 * H), dt)
        F = by_gate(dG, 4)
        mul(A, A, F)
        sub(A[:3, ...], F[:3, ...], F[:3, ...])            # s (1 - s)
        sub(1.0, F[3, ...], F[3, ...])                     # 1 - g^2
        mul(F[0, ...], TC, F[0, ...])                      # o: tanh(c)
        mul(F[1, ...], A[3, ...], F[1, ...])               # i: g
        mul(F[2, ...], CB[r:r + T, ...], F[2, ...])        # f: c before the step
        mul(F[3, ...], A[1, ...], F[3, ...])               # g: i
        Q = empty((T, B, H), dt)                           # dc_t += dh_t * o (1 - tanh(c)^2)
        mul(TC, TC, Q)
        sub(1.0, Q, Q)
        mul(Q, A[0, ...], Q)
        w_rec = packed_rows(w_hh, LSTM_ORDER)              # (4H, P)
        DHP = None if w_hr is None else empty((T, B, P), dt)
        dh = xp.empty((B, P), dtype=dt)
        dhh = dh if w_hr is None else xp.empty((B, H), dtype=dt)
        dct = xp.empty((B, H), dtype=dt)
        dc = xp.array(dcT, copy=True)
        R = xp.empty((B, P), dtype=dt)
        carry_h = carry_c = None
        for s, t in enumerate(steps(T, not reverse)):
            add(dhT if s == 0 else R, dout[t, ...], dh)
            if mask is not None:
                m = mask[t, ...]
                carry_h, carry_c = mask_step(dh, carry_h, m), mask_step(dc, None, m)
            if w_hr is not None:
                DHP[t, ...] = dh
                mm(dh, w_hr, dhh)
            mul(dhh, Q[t, ...], dct)
            add(dct, dc, dct)
            g = F[:, t, ...]
            mul(g[0, ...], dhh, g[0, ...])
            mul(g[1:, ...], dct, g[1:, ...])
            mul(dct, A[2, t, ...], dc)
            if carry_c is not None:
                add(dc, carry_c, dc)
            if s < T - 1 or needs[1]:
                mm(dG[t, ...], w_rec, R)
        dh0 = None
        if needs[1]:
            dh0 = R if carry_h is None else R + carry_h
        dx, dw_ih, db = weight_grads(dG, x, w_ih, LSTM_BACK, LSTM_ORDER, needs[0])
        d2 = xp.reshape(dG, (T * B, 4 * H))
        dw_hh = pytorch_order(xp.reshape(product(d2.T, xp.reshape(HB[r:r + T, ...], (T * B, P))), (4, H, P)),
                              LSTM_BACK)
        dw_hr = None
        if w_hr is not None:
            dw_hr = product(xp.reshape(DHP, (T * B, P)).T, xp.reshape(HP, (T * B, H)))
        return dx, dw_ih, dw_hh, db, xp.array(db, copy=True), dh0, dc if needs[2] else None, dw_hr
    return {"lstm_forward": lstm_forward, "lstm_backward": lstm_backward}


# ------------------------------------------------------------------ GRU (gates r, z, n)
# Gate-major as the LSTM, in PyTorch's order (the sigmoid gates r, z are the slice A[:2]);
# n = tanh(x W_in^T + b_in + r * (h W_hn^T + b_hn)), h' = n + z (h - n).
GRU_ORDER = (0, 1, 2)


def _gru(xp, h) -> dict:
    """GRU: forward and backward over a whole sequence, on the shared helpers ``h``."""
    empty, product, add, sub, mul, tanh = h.empty, h.product, h.add, h.sub, h.mul, h.tanh
    mm, copy, steps, keep, mask_step, gate_major = h.mm, h.copy, h.steps, h.keep, h.mask_step, h.gate_major
    pytorch_order, project, packed_rows = h.pytorch_order, h.project, h.packed_rows
    by_gate, weight_grads = h.by_gate, h.weight_grads

    def gru_forward(x, w_ih, w_hh, b_ih, b_hh, h0, mask, reverse):
        T, B, _ = x.shape
        H = w_hh.shape[1]
        dt = x.dtype
        half = xp.reshape(xp.asarray([0.5, 0.5, 1.0], dtype=dt), (3, 1, 1))
        p5 = xp.asarray(0.5, dtype=dt)
        if b_ih is None:
            bias, b_hn = None, xp.zeros((H,), dtype=dt)
        else:  # b_hr and b_hz join the input side; b_hn stays inside r * (...)
            bi, bh = gate_major(b_ih, GRU_ORDER), gate_major(b_hh, GRU_ORDER)
            bias, b_hn = xp.stack([bi[0, ...] + bh[0, ...], bi[1, ...] + bh[1, ...], bi[2, ...]]), bh[2, ...]
        A = project(x, w_ih, bias, GRU_ORDER, half)                           # (3, T, B, H)
        w_rec = packed_rows(w_hh, GRU_ORDER, half).T                          # (H, 3H)
        r = 1 if reverse else 0
        HB = empty((T + 1, B, H), dt)   # h before step t: HB[t + r], after it: HB[t + 1 - r]
        HN = empty((T, B, H), dt)       # h W_hn^T + b_hn of every step
        out = None if mask is None else xp.zeros((T, B, H), dtype=dt)
        HB[r * T, ...] = h0
        rec = xp.empty((B, 3 * H), dtype=dt)
        G = by_gate(rec, 3)
        tmp = xp.empty((B, H), dtype=dt)
        for t in steps(T, reverse):
            p, n = t + r, t + 1 - r
            a = A[:, t, ...]
            mm(HB[p, ...], w_rec, rec)
            rz = a[:2, ...]
            add(rz, G[:2, ...], rz)
            tanh(rz, rz)
            mul(rz, p5, rz)
            add(rz, p5, rz)
            hn, cand = HN[t, ...], a[2, ...]
            add(G[2, ...], b_hn, hn)
            mul(a[0, ...], hn, tmp)
            add(cand, tmp, cand)
            tanh(cand, cand)
            sub(HB[p, ...], cand, tmp)
            mul(a[1, ...], tmp, tmp)
            add(cand, tmp, HB[n, ...])
            if mask is not None:
                m = mask[t, ...]
                out[t, ...] = m * HB[n, ...]
                HB[n, ...] = keep(m, HB[n, ...], HB[p, ...])
        if out is None:
            out = copy(HB[1 - r:T + 1 - r, ...])
        return out, xp.array(HB[(1 - r) * T, ...], copy=True), (A, HB, HN)

    def gru_backward(dout, dhT, cache, x, w_ih, w_hh, mask, reverse, needs):
        """Gradients of ``x, w_ih, w_hh, b_ih, b_hh, h0``; ``needs``: whether ``x`` and ``h0`` want theirs."""
        A, HB, HN = cache
        _, T, B, H = A.shape
        dt = A.dtype
        r = 1 if reverse else 0
        # F[k, t]: the factor of gate k's gradient known before the loop (times dh for z and n, times dn for r),
        # written as the rows of dG (T, B, 3H), the h side's gradient (dr, dz, dn * r) the loop makes in place
        dG = empty((T, B, 3 * H), dt)
        F = by_gate(dG, 3)
        rg, zg, ng = A[0, ...], A[1, ...], A[2, ...]
        sub(1.0, rg, F[0, ...])
        mul(F[0, ...], rg, F[0, ...])
        mul(F[0, ...], HN, F[0, ...])                       # r (1 - r) (h W_hn^T + b_hn)
        sub(1.0, zg, F[1, ...])
        mul(ng, ng, F[2, ...])
        sub(1.0, F[2, ...], F[2, ...])
        mul(F[2, ...], F[1, ...], F[2, ...])                # (1 - z)(1 - n^2)
        mul(F[1, ...], zg, F[1, ...])
        hmn = HB[r:r + T, ...] - ng
        mul(F[1, ...], hmn, F[1, ...])                      # z (1 - z)(h - n)
        DN = empty((T, B, H), dt)                  # dn of every step (the input side's n)
        w_rec = packed_rows(w_hh, GRU_ORDER)
        dh = xp.empty((B, H), dtype=dt)
        dz = xp.empty((B, H), dtype=dt)                     # the direct path dh * z
        R = xp.empty((B, H), dtype=dt)
        carry = None
        for s, t in enumerate(steps(T, not reverse)):
            if s == 0:
                add(dhT, dout[t, ...], dh)
            else:
                add(R, dout[t, ...], dh)
                add(dh, dz, dh)
            if mask is not None:
                carry = mask_step(dh, carry, mask[t, ...])
            g = F[:, t, ...]
            dn = DN[t, ...]
            mul(g[1, ...], dh, g[1, ...])                   # dz
            mul(g[2, ...], dh, dn)
            mul(g[0, ...], dn, g[0, ...])                   # dr
            mul(dn, A[0, t, ...], g[2, ...])
            mul(dh, A[1, t, ...], dz)
            if s < T - 1 or needs[1]:
                mm(dG[t, ...], w_rec, R)
        dh0 = None
        if needs[1]:
            dh0 = R + dz if carry is None else R + dz + carry
        d2 = xp.reshape(dG, (T * B, 3 * H))
        dw_hh = pytorch_order(xp.reshape(product(d2.T, xp.reshape(HB[r:r + T, ...], (T * B, H))), (3, H, H)),
                              GRU_ORDER)
        db_hh = xp.reshape(xp.sum(d2, axis=0), (3 * H,))
        F[2, ...] = DN                                      # the input side of n: dn
        dx, dw_ih, db_ih = weight_grads(dG, x, w_ih, GRU_ORDER, GRU_ORDER, needs[0])
        return dx, dw_ih, dw_hh, db_ih, db_hh, dh0
    return {"gru_forward": gru_forward, "gru_backward": gru_backward}


# ------------------------------------------------------------------ Elman RNN (tanh or relu)


def _rnn(xp, h) -> dict:
    """Elman RNN (tanh or relu): forward and backward over a whole sequence, on the shared helpers ``h``."""
    empty, relu_into, product, add, sub, mul = h.empty, h.relu_into, h.product, h.add, h.sub, h.mul
    tanh, mm, copy, steps, keep, mask_step = h.tanh, h.mm, h.copy, h.steps, h.keep, h.mask_step
    project, weight_grads = h.project, h.weight_grads

    def activate(relu, a, out):
        if relu:
            relu_into(a, out)
        else:
            tanh(a, out)

    def rnn_forward(x, w_ih, w_hh, b_ih, b_hh, h0, relu, mask, reverse):
        T, B, _ = x.shape
        H = w_hh.shape[0]
        dt = x.dtype
        # float16, bfloat16: PyTorch's roundings, x W_ih^T + b_ih and h W_hh^T + b_hh each rounded once, then their
        # sum (a summed bias and products rounded apart round otherwise, and a pre-activation near 0 that changes
        # sign changes relu's gradient)
        half = getattr(dt, "itemsize", 0) == 2
        if half:
            A = xp.reshape(linear(xp.reshape(x, (T * B, -1)), w_ih, b_ih, dt), (T, B, H))
        else:
            bias = None if b_ih is None else xp.reshape(b_ih + b_hh, (1, H))
            A = project(x, w_ih, bias, (0,), None)[0, ...]    # (T, B, H); with a mask it becomes the new h
        whT = w_hh.T
        r = 1 if reverse else 0
        HB = empty((T + 1, B, H), dt)
        out = None if mask is None else xp.zeros((T, B, H), dtype=dt)
        HB[r * T, ...] = h0
        G = xp.empty((B, H), dtype=dt)
        for t in steps(T, reverse):
            p, n = t + r, t + 1 - r
            a = A[t, ...]
            if half:
                add(a, linear(HB[p, ...], w_hh, b_hh, dt), a)
            else:
                mm(HB[p, ...], whT, G)
                add(a, G, a)
            activate(relu, a, HB[n, ...])
            if mask is not None:
                m = mask[t, ...]
                a[...] = HB[n, ...]
                out[t, ...] = m * a
                HB[n, ...] = keep(m, a, HB[p, ...])
        new = HB[1 - r:T + 1 - r, ...]
        if out is None:
            out = copy(new)
        return out, xp.array(HB[(1 - r) * T, ...], copy=True), (A if mask is not None else new, HB)

    def linear(a, w, b, dt):
        """``a @ w.T + b`` in ``dt`` as PyTorch's linear of a half type: from float32, rounded once."""
        r = xp.matmul(xp.astype(a, xp.float32), xp.astype(w, xp.float32).T)
        return xp.astype(r if b is None else r + xp.astype(b, xp.float32), dt)

    def rnn_backward(dout, dhT, cache, x, w_ih, w_hh, relu, mask, reverse, needs):
        """Gradients of ``x, w_ih, w_hh, b_ih, b_hh, h0``; ``needs``: whether ``x`` and ``h0`` want theirs."""
        hs, HB = cache
        T, B, H = hs.shape
        dt = hs.dtype
        r = 1 if reverse else 0
        F = empty((T, B, H), dt)                   # the activation's derivative, then dpre
        if relu:
            F[...] = xp.astype(hs > 0, dt)
        else:
            mul(hs, hs, F)
            sub(1.0, F, F)
        dh = xp.empty((B, H), dtype=dt)
        R = xp.empty((B, H), dtype=dt)
        carry = None
        for s, t in enumerate(steps(T, not reverse)):
            add(dhT if s == 0 else R, dout[t, ...], dh)
            if mask is not None:
                carry = mask_step(dh, carry, mask[t, ...])
            g = F[t, ...]
            mul(g, dh, g)
            if s < T - 1 or needs[1]:
                mm(g, w_hh, R)
        dh0 = None
        if needs[1]:
            dh0 = R if carry is None else R + carry
        dG = xp.reshape(F, (T * B, H))
        dw_hh = product(dG.T, xp.reshape(HB[r:r + T, ...], (T * B, H)))
        dx, dw_ih, db = weight_grads(F, x, w_ih, (0,), (0,), needs[0])
        return dx, dw_ih, dw_hh, db, xp.array(db, copy=True), dh0
    return {"rnn_forward": rnn_forward, "rnn_backward": rnn_backward}


def kernels(xp, strategy=None) -> dict:
    """The recurrent kernels bound for ``xp`` and the backend's hooks (``strategy``, plain by default)."""
    h = _helpers(xp, strategy or Strategy(xp))
    return {**_lstm(xp, h), **_gru(xp, h), **_rnn(xp, h)}

"""Recurrent kernels: the time loop of one layer and direction, forward and backward.

The input projection of every time step is done by the caller in one GEMM;
a step here is one GEMM with the recurrent weights plus the gate arithmetic.
The backward runs the loop in reverse collecting the gate gradients of every
step, so the weight gradients are one GEMM each afterwards.

``mask`` (T, B, 1), when given, is 1 where a sequence is still running: a
finished sequence keeps its state and outputs zeros (packed sequences).
"""
from __future__ import annotations


QUIET = {"lstm_forward", "lstm_backward", "gru_forward", "gru_backward", "rnn_forward", "rnn_backward"}

def kernels(xp) -> dict:
    def sigmoid(x):
        return 1 / (1 + xp.exp(-x))

    def steps(T, reverse):
        return range(T - 1, -1, -1) if reverse else range(T)

    def _keep(m, new, old):
        return new if m is None else m * new + (1 - m) * old

    # ------------------------------------------------------------------ LSTM (gates i, f, g, o)
    def lstm_forward(xproj, h0, c0, w_hh, w_hr, mask, reverse):
        T, B, H4 = xproj.shape
        H = H4 // 4
        P = h0.shape[-1]
        out = xp.zeros((T, B, P), dtype=xproj.dtype)
        acts = xp.empty((T, B, H4), dtype=xproj.dtype)
        cs = xp.empty((T, B, H), dtype=xproj.dtype)
        hs_prev = xp.empty((T, B, P), dtype=xproj.dtype)
        cs_prev = xp.empty((T, B, H), dtype=xproj.dtype)
        hpre = xp.empty((T, B, H), dtype=xproj.dtype) if w_hr is not None else None
        h, c = h0, c0
        for t in steps(T, reverse):
            hs_prev[t], cs_prev[t] = h, c
            gates = xproj[t] + h @ w_hh.T
            a = acts[t]
            a[:, :2 * H] = sigmoid(gates[:, :2 * H])
            a[:, 2 * H:3 * H] = xp.tanh(gates[:, 2 * H:3 * H])
            a[:, 3 * H:] = sigmoid(gates[:, 3 * H:])
            c_new = a[:, H:2 * H] * c + a[:, :H] * a[:, 2 * H:3 * H]
            h_new = a[:, 3 * H:] * xp.tanh(c_new)
            if w_hr is not None:
                hpre[t] = h_new
                h_new = h_new @ w_hr.T
            m = None if mask is None else mask[t]
            cs[t] = c_new
            out[t] = h_new if m is None else m * h_new
            h, c = _keep(m, h_new, h), _keep(m, c_new, c)
        return out, h, c, (acts, cs, hs_prev, cs_prev, hpre)

    def lstm_backward(dout, dhT, dcT, cache, w_hh, w_hr, mask, reverse):
        acts, cs, hs_prev, cs_prev, hpre = cache
        T, B, H4 = acts.shape
        H = H4 // 4
        dgates = xp.empty_like(acts)
        dhpre_all = xp.empty_like(hs_prev) if hpre is not None else None  # gradients of the projected h
        dh, dc = dhT, dcT
        for t in steps(T, not reverse):
            m = None if mask is None else mask[t]
            dh_out = dh + dout[t]
            dhn, dcn = (dh_out, dc) if m is None else (m * dh_out, m * dc)
            if w_hr is not None:
                dhpre_all[t] = dhn
                dhn = dhn @ w_hr
            a = acts[t]
            i, f, g, o = a[:, :H], a[:, H:2 * H], a[:, 2 * H:3 * H], a[:, 3 * H:]
            tc = xp.tanh(cs[t])
            dct = dcn + dhn * o * (1 - tc * tc)
            d = dgates[t]
            d[:, :H] = dct * g * i * (1 - i)
            d[:, H:2 * H] = dct * cs_prev[t] * f * (1 - f)
            d[:, 2 * H:3 * H] = dct * i * (1 - g * g)
            d[:, 3 * H:] = dhn * tc * o * (1 - o)
            dh_prev = d @ w_hh
            dc_prev = dct * f
            if m is not None:
                dh_prev = dh_prev + (1 - m) * dh_out
                dc_prev = dc_prev + (1 - m) * dc
            dh, dc = dh_prev, dc_prev
        P = hs_prev.shape[-1]
        dw_hh = dgates.reshape(T * B, H4).T @ hs_prev.reshape(T * B, P)
        dw_hr = None
        if w_hr is not None:
            dw_hr = dhpre_all.reshape(T * B, P).T @ hpre.reshape(T * B, H)
        return dgates, dh, dc, dw_hh, dw_hr

    # ------------------------------------------------------------------ GRU (gates r, z, n)
    def gru_forward(xproj, h0, w_hh, b_hn, mask, reverse):
        T, B, H3 = xproj.shape
        H = H3 // 3
        out = xp.zeros((T, B, H), dtype=xproj.dtype)
        acts = xp.empty((T, B, H3), dtype=xproj.dtype)
        hn = xp.empty((T, B, H), dtype=xproj.dtype)  # h @ W_hn + b_hn, needed by the backward
        hs_prev = xp.empty((T, B, H), dtype=xproj.dtype)
        h = h0
        for t in steps(T, reverse):
            hs_prev[t] = h
            hh = h @ w_hh.T
            a = acts[t]
            a[:, :2 * H] = sigmoid(xproj[t, :, :2 * H] + hh[:, :2 * H])
            hn[t] = hh[:, 2 * H:] + b_hn
            a[:, 2 * H:] = xp.tanh(xproj[t, :, 2 * H:] + a[:, :H] * hn[t])
            z = a[:, H:2 * H]
            h_new = (1 - z) * a[:, 2 * H:] + z * h
            m = None if mask is None else mask[t]
            out[t] = h_new if m is None else m * h_new
            h = _keep(m, h_new, h)
        return out, h, (acts, hn, hs_prev)

    def gru_backward(dout, dhT, cache, w_hh, mask, reverse):
        acts, hn, hs_prev = cache
        T, B, H3 = acts.shape
        H = H3 // 3
        dx = xp.empty_like(acts)      # gradient of the input projection
        dhh = xp.empty_like(acts)     # gradient of h @ W_hh.T (+ b_hn for the n part)
        dh = dhT
        for t in steps(T, not reverse):
            m = None if mask is None else mask[t]
            dh_out = dh + dout[t]
            dhn_ = dh_out if m is None else m * dh_out
            a = acts[t]
            r, z, n = a[:, :H], a[:, H:2 * H], a[:, 2 * H:]
            hp = hs_prev[t]
            dn = dhn_ * (1 - z) * (1 - n * n)
            dz = dhn_ * (hp - n) * z * (1 - z)
            dr = dn * hn[t] * r * (1 - r)
            dx[t, :, :H], dx[t, :, H:2 * H], dx[t, :, 2 * H:] = dr, dz, dn
            dhh[t, :, :H], dhh[t, :, H:2 * H], dhh[t, :, 2 * H:] = dr, dz, dn * r
            dh_prev = dhh[t] @ w_hh + dhn_ * z
            if m is not None:
                dh_prev = dh_prev + (1 - m) * dh_out
            dh = dh_prev
        dw_hh = dhh.reshape(T * B, H3).T @ hs_prev.reshape(T * B, H)
        db_hn = dhh[:, :, 2 * H:].reshape(T * B, H).sum(0)
        return dx, dh, dw_hh, db_hn

    # ------------------------------------------------------------------ Elman RNN (tanh or relu)
    def rnn_forward(xproj, h0, w_hh, relu, mask, reverse):
        T, B, H = xproj.shape
        out = xp.zeros((T, B, H), dtype=xproj.dtype)
        hs = xp.empty((T, B, H), dtype=xproj.dtype)
        hs_prev = xp.empty((T, B, H), dtype=xproj.dtype)
        h = h0
        for t in steps(T, reverse):
            hs_prev[t] = h
            pre = xproj[t] + h @ w_hh.T
            h_new = xp.maximum(pre, 0) if relu else xp.tanh(pre)
            hs[t] = h_new
            m = None if mask is None else mask[t]
            out[t] = h_new if m is None else m * h_new
            h = _keep(m, h_new, h)
        return out, h, (hs, hs_prev)

    def rnn_backward(dout, dhT, cache, w_hh, relu, mask, reverse):
        hs, hs_prev = cache
        T, B, H = hs.shape
        dpre = xp.empty_like(hs)
        dh = dhT
        for t in steps(T, not reverse):
            m = None if mask is None else mask[t]
            dh_out = dh + dout[t]
            dhn = dh_out if m is None else m * dh_out
            dp = dhn * (hs[t] > 0) if relu else dhn * (1 - hs[t] * hs[t])
            dpre[t] = dp
            dh_prev = dp @ w_hh
            if m is not None:
                dh_prev = dh_prev + (1 - m) * dh_out
            dh = dh_prev
        dw_hh = dpre.reshape(T * B, H).T @ hs_prev.reshape(T * B, H)
        return dpre, dh, dw_hh

    return {"lstm_forward": lstm_forward, "lstm_backward": lstm_backward, "gru_forward": gru_forward,
            "gru_backward": gru_backward, "rnn_forward": rnn_forward, "rnn_backward": rnn_backward}

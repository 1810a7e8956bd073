"""Connectionist temporal classification: the alpha (forward) and beta (backward) recursions in log space.

A target ``l`` of length ``S`` is extended with blanks to ``l' = (blank, l_1, blank, l_2, ..., l_S, blank)``
(``2S + 1`` positions).  Both recursions run over time in a Python loop; each step is a handful of array
operations over the whole batch and every extended position at once.  Samples shorter than the longest
are handled by masks: positions past a sample's ``2 * target_length`` and steps past its
``input_length`` stay at ``-inf`` where they could feed the result.

Lengths arrive as tuples of Python ints (already checked on the host); ``targets`` is either padded
``(N, S_max)`` or concatenated 1-D, as in PyTorch.
"""
from __future__ import annotations

import itertools
import math

NEG_INF = -math.inf


QUIET = {"ctc_loss", "ctc_loss_backward"}  # log(0) of impossible alignments is -inf

def kernels(xp, strategy=None) -> dict:
    astype = getattr(xp, "astype", None) or (lambda a, dtype: a.astype(dtype))

    def lse3(a, b, c):
        """``log(exp(a) + exp(b) + exp(c))`` elementwise, ``-inf`` when all three are."""
        m = xp.maximum(xp.maximum(a, b), c)
        m = xp.where(m == NEG_INF, xp.zeros_like(m), m)
        return xp.log(xp.exp(a - m) + xp.exp(b - m) + xp.exp(c - m)) + m

    def shift(x, k, fill):
        """``x`` moved ``k`` places along the last axis (right for ``k > 0``), the gap filled with ``fill``."""
        n, width = x.shape
        pad = xp.full((n, abs(k)), fill, dtype=x.dtype)
        if k > 0:
            return xp.concatenate([pad, x[:, :width - k]], axis=1) if k < width else pad[:, :width]
        return xp.concatenate([x[:, -k:], pad], axis=1) if -k < width else pad[:, :width]

    def extended_labels(targets, target_lengths, blank):
        """``l'`` per sample ``(N, 2S+1)`` (blank past each target's end) and where the skip ``s-2 -> s`` is
        allowed (``l'_s != l'_{s-2}``)."""
        n = len(target_lengths)
        s_max = max(target_lengths, default=0)
        tl = xp.asarray(target_lengths, dtype=xp.int64)
        pos = xp.arange(s_max, dtype=xp.int64)
        valid = pos[None, :] < tl[:, None]
        targets = astype(targets, xp.int64)
        if targets.ndim == 1:
            starts = [0, *itertools.accumulate(target_lengths)][:n]
            idx = xp.asarray(starts, dtype=xp.int64)[:, None] + pos[None, :]
            idx = xp.where(valid, idx, xp.zeros_like(idx))
            labels = xp.reshape(xp.take(targets, xp.reshape(idx, (-1,)), axis=0), (n, s_max))
        else:
            labels = targets[:, :s_max]
        blanks = xp.full((n, s_max), blank, dtype=xp.int64)
        labels = xp.where(valid, labels, blanks)
        interleaved = xp.reshape(xp.stack([blanks, labels], axis=2), (n, 2 * s_max))
        ext = xp.concatenate([interleaved, xp.full((n, 1), blank, dtype=xp.int64)], axis=1)
        skip = xp.concatenate([xp.full((n, min(2, 2 * s_max + 1)), False), ext[:, 2:] != ext[:, :-2]], axis=1)
        return ext, skip, labels

    def ctc_loss(log_probs, targets, input_lengths, target_lengths, blank):
        """Negative log-likelihood per sample ``(N,)`` of ``log_probs`` ``(T, N, C)``, and what the backward
        needs: ``log_alpha`` ``(T', N, 2S+1)`` over the first ``T' = max(input_lengths)`` steps, the
        log-probabilities at the extended labels, the labels and skips, and the labels' smallest and largest
        value (for a bounds check)."""
        _, n, c = log_probs.shape
        ext, skip, labels = extended_labels(targets, target_lengths, blank)
        ext = xp.clip(ext, 0, c - 1)  # out-of-range labels are reported by the caller from ``bounds``
        width = ext.shape[1]
        t_max = max(input_lengths, default=0)
        flat = xp.reshape(ext + xp.arange(n, dtype=xp.int64)[:, None] * c, (-1,))
        steps = xp.reshape(log_probs[:t_max, ...], (t_max, n * c))
        lpe = xp.reshape(xp.take(steps, flat, axis=1), (t_max, n, width))
        neg = xp.full((n, width), NEG_INF, dtype=log_probs.dtype)
        alphas = []
        if t_max:
            first = xp.arange(width)[None, :] < 2
            alphas.append(xp.where(first, lpe[0, ...], neg))
        for t in range(1, t_max):
            prev = alphas[-1]
            two_back = xp.where(skip, shift(prev, 2, NEG_INF), neg)
            alphas.append(lse3(prev, shift(prev, 1, NEG_INF), two_back) + lpe[t, ...])
        log_alpha = xp.stack(alphas, axis=0) if t_max else xp.zeros((0, n, width), dtype=log_probs.dtype)
        il = xp.asarray(input_lengths, dtype=xp.int64)
        tl = xp.asarray(target_lengths, dtype=xp.int64)
        rows = xp.clip(il - 1, 0, None) * n + xp.arange(n, dtype=xp.int64)
        if t_max:
            last = xp.reshape(xp.take(xp.reshape(log_alpha, (t_max * n, width)), rows, axis=0), (-1,))
            base = xp.arange(n, dtype=xp.int64) * width
            end = xp.take(last, base + 2 * tl, axis=0)
            before = xp.take(last, base + xp.clip(2 * tl - 1, 0, None), axis=0)
            before = xp.where(tl > 0, before, xp.full_like(before, NEG_INF))
            nll = -lse3(end, before, xp.full_like(end, NEG_INF))
        else:
            nll = xp.zeros((n,), dtype=log_probs.dtype)
        # no time step: the empty target has probability 1, any other is impossible
        empty = xp.where(tl == 0, xp.zeros_like(nll), xp.full_like(nll, math.inf))
        nll = xp.where(il == 0, empty, nll)
        bounds = (int(xp.min(labels)), int(xp.max(labels))) if labels.size else (blank, blank)
        return nll, (log_alpha, lpe, ext, skip), bounds

    def ctc_loss_backward(grad, log_probs, nll, saved, input_lengths, target_lengths, zero_infinity):
        """The gradient with respect to ``log_probs`` ``(T, N, C)`` of ``sum(grad * nll)``, PyTorch's formula
        ``(exp(lp) - exp(log(sum over s with l'_s = c of alpha * beta) + nll - lp)) * grad`` for the steps
        within each input length, zero after them.  The ``exp(lp)`` term makes it the exact gradient of the
        logits when ``log_probs = log_softmax(logits)`` (it cancels through the softmax Jacobian)."""
        log_alpha, lpe, ext, skip = saved
        T, n, c = log_probs.shape
        t_max, _, width = log_alpha.shape
        if t_max == 0:
            return xp.zeros_like(log_probs)
        il = xp.asarray(input_lengths, dtype=xp.int64)
        tl = xp.asarray(target_lengths, dtype=xp.int64)
        pos = xp.arange(width, dtype=xp.int64)[None, :]
        at_end = (pos == 2 * tl[:, None]) | (pos == 2 * tl[:, None] - 1)
        skip_back = shift(skip, -2, False)
        neg = xp.full((n, width), NEG_INF, dtype=log_probs.dtype)
        betas = [neg] * t_max
        nxt = neg
        for t in range(t_max - 1, -1, -1):
            two_ahead = xp.where(skip_back, shift(nxt, -2, NEG_INF), neg)
            rec = lse3(nxt, shift(nxt, -1, NEG_INF), two_ahead) + lpe[t, ...]
            start = xp.where(at_end, lpe[t, ...], neg)
            nxt = xp.where((il == t + 1)[:, None], start, rec)
            betas[t] = nxt
        ab = log_alpha + xp.stack(betas, axis=0)
        m = xp.max(ab, axis=2, keepdims=True)
        m = xp.where(m == NEG_INF, xp.zeros_like(m), m)
        # sum over the extended positions of each class: one bincount over (t, n, class) cells
        cell = (xp.arange(t_max * n, dtype=xp.int64) * c)[:, None] + xp.reshape(
            xp.broadcast_to(ext[None, ...], (t_max, n, width)), (t_max * n, width))
        summed = xp.bincount(xp.reshape(cell, (-1,)), weights=xp.reshape(xp.exp(ab - m), (-1,)),
                             minlength=t_max * n * c)
        log_collected = xp.log(astype(xp.reshape(summed, (t_max, n, c)), log_probs.dtype)) + m
        lp = log_probs[:t_max, ...]
        g = (xp.exp(lp) - xp.exp(log_collected + nll[None, :, None] - lp)) * grad[None, :, None]
        keep = xp.arange(t_max, dtype=xp.int64)[:, None] < il[None, :]
        if zero_infinity:
            keep = keep & ~xp.isinf(nll)[None, :]
        g = xp.where(keep[:, :, None], g, xp.zeros_like(g))
        if t_max < T:
            g = xp.concatenate([g, xp.zeros((T - t_max, n, c), dtype=g.dtype)], axis=0)
        return g

    return {"ctc_loss": ctc_loss, "ctc_loss_backward": ctc_loss_backward}

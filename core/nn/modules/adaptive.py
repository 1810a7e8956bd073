"""``AdaptiveLogSoftmaxWithLoss``: the efficient softmax approximation of Grave et al. (2016), with PyTorch's
parameters (a head over the frequent classes and one cluster token per tail, a two-layer projection per
tail), so its state dicts load across."""
from __future__ import annotations

from collections import namedtuple

from ...ops.shape import cat
from .. import functional as F
from .containers import ModuleList, Sequential
from .linear import Linear
from .module import Module

_ASMoutput = namedtuple("_ASMoutput", ["output", "loss"])


class AdaptiveLogSoftmaxWithLoss(Module):
    """Log-probabilities of ``n_classes`` split at ``cutoffs`` into a head and tails of decreasing width.

    ``forward(input, target)`` returns ``(output, loss)``: each target's log-probability and the mean negative
    log-likelihood.

    >>> import ember
    >>> m = ember.nn.AdaptiveLogSoftmaxWithLoss(8, 10, [4, 7])
    >>> out, loss = m(ember.randn(3, 8), ember.tensor([0, 5, 9]))
    >>> out.shape, m.log_prob(ember.randn(3, 8)).shape
    (ember.Size([3]), ember.Size([3, 10]))
    """

    def __init__(self, in_features: int, n_classes: int, cutoffs, div_value: float = 4.0, head_bias: bool = False,
                 device=None, dtype=None):
        super().__init__()
        cutoffs = list(cutoffs)
        if len(cutoffs) == 0:
            raise ValueError("cutoffs should be a sequence of length larger than 0")
        if (cutoffs != sorted(cutoffs) or min(cutoffs) <= 0 or max(cutoffs) > n_classes - 1
                or len(set(cutoffs)) != len(cutoffs) or any(int(c) != c for c in cutoffs)):
            raise ValueError("cutoffs should be a sequence of unique, positive integers sorted in an increasing "
                             "order, where each value is between 1 and n_classes-1")
        kw = {"device": device, "dtype": dtype}
        self.in_features, self.n_classes = in_features, n_classes
        self.cutoffs = cutoffs + [n_classes]
        self.div_value, self.head_bias = div_value, head_bias
        self.shortlist_size = self.cutoffs[0]
        self.n_clusters = len(self.cutoffs) - 1
        self.head_size = self.shortlist_size + self.n_clusters
        self.head = Linear(in_features, self.head_size, bias=head_bias, **kw)
        self.tail = ModuleList()
        for i in range(self.n_clusters):
            hsz = int(in_features // (div_value ** (i + 1)))
            osz = self.cutoffs[i + 1] - self.cutoffs[i]
            self.tail.append(Sequential(Linear(in_features, hsz, bias=False, **kw),
                                        Linear(hsz, osz, bias=False, **kw)))

    def reset_parameters(self) -> None:
        self.head.reset_parameters()
        for i2h, h2o in self.tail:
            i2h.reset_parameters()
            h2o.reset_parameters()

    def _full_log_prob(self, x, head_output):
        head = F.log_softmax(head_output, dim=1)
        parts = [head[:, :self.shortlist_size]]
        for i in range(self.n_clusters):
            parts.append(F.log_softmax(self.tail[i](x), dim=1) + head[:, self.shortlist_size + i].unsqueeze(1))
        return cat(parts, 1)

    def forward(self, input_, target_):
        td = target_.dim()
        if td == 1:
            if input_.size(0) != target_.size(0):
                raise RuntimeError("Input and target should have the same size in the batch dimension.")
            if input_.dim() != 2:
                raise RuntimeError(f"1D target tensor expects 2D input tensors, but found inputs with size "
                                   f"{input_.size()}")
        elif td == 0:
            if input_.dim() != 1:
                raise RuntimeError(f"0D target tensor expects 1D input tensors, but found inputs with size "
                                   f"{input_.size()}")
        else:
            raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
        x = input_ if td else input_.unsqueeze(0)
        t = target_ if td else target_.unsqueeze(0)
        if t.numel() and (int(t.min().item()) < 0 or int(t.max().item()) >= self.n_classes):
            raise RuntimeError(f"Target values should be in [0, {self.n_classes - 1}], but values in range "
                               f"[{t.min().item()}, {t.max().item()}] were found. ")
        output = self._full_log_prob(x, self.head(x)).gather(1, t.unsqueeze(1)).squeeze(1)
        loss = (-output).mean()
        return _ASMoutput(output if td else output.squeeze(0), loss)

    def log_prob(self, input):  # noqa: A002
        """Log-probabilities of every class, ``(N, n_classes)`` (or ``(n_classes,)``)."""
        x = input if input.dim() == 2 else input.unsqueeze(0)
        out = self._full_log_prob(x, self.head(x))
        return out if input.dim() == 2 else out.squeeze(0)

    def predict(self, input):  # noqa: A002
        """The most likely class of each row."""
        return self.log_prob(input).argmax(-1)

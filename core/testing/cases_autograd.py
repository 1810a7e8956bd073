"""Case table: autograd safety in the corners (in-place activations, index assignment, version counters,
edge-case gradients, ``grad_fn`` names).  Cases and their check: :mod:`ember.testing.case`."""
from __future__ import annotations

from .case import DATA, Case, T, grad_of


# =========================================================================== autograd: in-place activations
def _inplace_act(call):
    """Apply an in-place activation to an intermediate (``x * 1.5``), then backpropagate a weighted sum."""
    def fn(m, dev):
        x = T(m, dev, DATA["v"] * 3, rg=True)
        y = x * 1.5
        z = call(m, y)
        assert z is y, "an in-place activation returns its input"
        (z * T(m, dev, DATA["w"])).sum().backward()
        return z.detach(), x.grad, y.requires_grad
    return fn


def _module(name, *args, **kw):
    return lambda m, y: getattr(m.nn, name)(*args, inplace=True, **kw)(y)


def _functional(name, *args, **kw):
    return lambda m, y: getattr(m.nn.functional, name)(y, *args, inplace=True, **kw)


INPLACE_ACTIVATIONS = [
    Case("ReLU", _inplace_act(_module("ReLU"))),
    Case("ReLU6", _inplace_act(_module("ReLU6"))),
    Case("LeakyReLU", _inplace_act(_module("LeakyReLU", 0.1))),
    Case("ELU", _inplace_act(_module("ELU", 0.7))),
    Case("CELU", _inplace_act(_module("CELU", 0.7))),
    Case("SELU", _inplace_act(_module("SELU"))),
    Case("Hardtanh", _inplace_act(_module("Hardtanh", -2.0, 2.5))),
    Case("SiLU", _inplace_act(_module("SiLU"))),
    Case("Mish", _inplace_act(_module("Mish"))),
    Case("Hardswish", _inplace_act(_module("Hardswish"))),
    Case("Hardsigmoid", _inplace_act(_module("Hardsigmoid"))),
    Case("Threshold", _inplace_act(_module("Threshold", 0.2, -3.0))),
    Case("F.threshold", _inplace_act(_functional("threshold", 0.2, -3.0))),
    Case("F.relu", _inplace_act(_functional("relu"))),
    Case("F.relu6", _inplace_act(_functional("relu6"))),
    Case("F.leaky_relu", _inplace_act(_functional("leaky_relu", 0.2))),
    Case("F.elu", _inplace_act(_functional("elu"))),
    Case("F.hardtanh", _inplace_act(_functional("hardtanh"))),
    Case("F.silu", _inplace_act(_functional("silu"))),
    Case("torch.relu_", _inplace_act(lambda m, y: m.relu_(y))),
    Case("torch.selu_", _inplace_act(lambda m, y: m.selu_(y))),
    Case("torch.celu_", _inplace_act(lambda m, y: m.celu_(y))),
    Case("torch.threshold_", _inplace_act(lambda m, y: m.threshold_(y, 0.1, 2.0))),
    Case("Tensor.sigmoid_", _inplace_act(lambda m, y: y.sigmoid_())),
    Case("Tensor.tanh_", _inplace_act(lambda m, y: y.tanh_())),
    Case("Tensor.exp_", _inplace_act(lambda m, y: y.exp_())),
    Case("Tensor.clamp_", _inplace_act(lambda m, y: y.clamp_(-1, 1))),
    # the same on a view: the base's history is rewritten (CopySlices)
    Case("ReLU6 on a view", _inplace_act(lambda m, y: (m.nn.ReLU6(inplace=True)(y[1:4]), y)[1])),
    Case("SiLU on a view", _inplace_act(lambda m, y: (m.nn.functional.silu(y[::2], inplace=True), y)[1])),
]


def _index_put(index, value_rg=False):
    def fn(m, dev):
        x = T(m, dev, DATA["v"], rg=True)
        v = T(m, dev, [1.5, -2.0], rg=value_rg)
        y = x * 2
        y[index(m, dev)] = v
        (y * y * T(m, dev, DATA["w"])).sum().backward()
        return y.detach(), x.grad, v.grad if value_rg else None, y.grad_fn.name()
    return fn


INDEX_ASSIGN = [
    Case("x[list] = v", _index_put(lambda m, dev: [0, 3])),
    Case("x[list] = v (v requires grad)", _index_put(lambda m, dev: [0, 3], True)),
    Case("x[tensor] = v", _index_put(lambda m, dev: m.tensor([4, 1], device=dev), True)),
    Case("x[mask] = v", _index_put(lambda m, dev: T(m, dev, [1, 0, 0, 0, 1, 0], "bool"), True)),
]


# =========================================================================== autograd: version counters
def _out_modified(op):
    def fn(m, dev):
        x = T(m, dev, DATA["v"] * 0.3 + 1.5, rg=True)
        y = op(x)
        y.mul_(2)
        y.sum().backward()
        return x.grad
    return fn


def _out_modified_unnamed(op):
    def fn(m, dev):  # the modified output is not kept in a variable: the check must not depend on its life
        x = T(m, dev, DATA["v"] * 0.3 + 1.5, rg=True)
        op(x).mul_(2).sum().backward()
        return x.grad
    return fn


def _expanded_inplace(rg):
    def fn(m, dev):
        x = T(m, dev, [1.0], rg=rg)
        y = (x * 1 if rg else x).expand(3)
        y.add_(1)
        return x
    return fn


def _nograd_view(base_rg, other_rg, inside):
    def fn(m, dev):
        x = T(m, dev, DATA["v"], rg=base_rg)
        b = x * 1 if base_rg else x
        with m.no_grad():
            v = b[:3]
        w = T(m, dev, [2.0, 3.0, 4.0], rg=other_rg)
        if inside:
            with m.no_grad():
                v.mul_(w)
        else:
            v.mul_(w)
        return b.detach()
    return fn


def _inference_use(call):
    def fn(m, dev):
        with m.inference_mode():
            x = T(m, dev, DATA["v"])
        w = T(m, dev, DATA["w"], rg=True)
        out = call(m, x, w)
        out.sum().backward()
        return w.grad, x.is_inference()
    return fn


def _view_sees_base(m, dev):
    x = T(m, dev, DATA["v"][:3], rg=True)
    w = T(m, dev, DATA["w"][:3], rg=True)
    b = x.clone()
    v = b[1:3]
    b.mul_(w)
    (v * v).sum().backward()
    return v.detach(), x.grad, w.grad


def _view_sees_base_leaf_view(m, dev):
    x = T(m, dev, DATA["m"], rg=True)
    w = T(m, dev, DATA["w"][:4], rg=True)
    b = x * 1
    v = b.t()
    r = b[1]
    r.mul_(w)  # changes b through another view: v must see it
    (v * 3).sum().backward()
    return x.grad, w.grad


VERSION_CHECKS = [
    Case("sigmoid output modified", _out_modified(lambda x: x.sigmoid())),
    Case("tanh output modified", _out_modified(lambda x: x.tanh())),
    Case("exp output modified", _out_modified(lambda x: x.exp())),
    Case("sqrt output modified", _out_modified(lambda x: x.sqrt())),
    Case("relu output modified", _out_modified(lambda x: x.relu())),
    Case("softmax output modified", _out_modified(lambda x: x.softmax(0))),
    Case("sigmoid output modified, unnamed", _out_modified_unnamed(lambda x: x.sigmoid())),
    Case("exp output modified, unnamed", _out_modified_unnamed(lambda x: x.exp())),
    Case("input of mul modified", _out_modified(lambda x: (lambda y: (y * y, y)[1])(x * 1))),
    Case("in-place on an expanded tensor", _expanded_inplace(True), needs_strides=True),
    Case("in-place on an expanded tensor, no grad", _expanded_inplace(False), needs_strides=True),
    Case("no_grad view of a leaf modified under grad", _nograd_view(True, False, False)),
    Case("no_grad view modified by a grad operand", _nograd_view(False, True, False)),
    Case("no_grad view modified under no_grad", _nograd_view(True, True, True)),
    Case("no_grad view of a constant modified", _nograd_view(False, False, False)),
    Case("inference tensor saved (mul)", _inference_use(lambda m, x, w: x * w)),
    Case("inference tensor not saved (add)", _inference_use(lambda m, x, w: x + w)),
    Case("inference tensor not saved (cat)", _inference_use(lambda m, x, w: m.cat([x, w]))),
    Case("inference tensor requires_grad_", lambda m, dev: _inference_use(lambda m, x, w: x.requires_grad_())(m, dev)),
    Case("inference tensor in-place outside", _inference_use(lambda m, x, w: x.add_(1) * w)),
    Case("view sees its base's in-place change", _view_sees_base),
    Case("view sees a sibling view's change", _view_sees_base_leaf_view),
]


# =========================================================================== autograd: edge-case gradients
def _const(m, dev):
    return T(m, dev, [[2.0, 2.0, 2.0], [1.0, -1.0, 3.0]], rg=True)


def _zero_rows(m, dev):
    return T(m, dev, [[0.0, 0.0, 0.0], [1.0, -2.0, 2.0]], rg=True)


def _nans(m, dev):
    return T(m, dev, [float("nan"), 0.0, -1.5, 2.0, float("inf"), -0.0], rg=True)


def _probs(m, dev):
    return T(m, dev, [0.0, 1.0, 0.5, 0.0, 1.0, 0.25], rg=True)


_TARGETS = [1.0, 0.0, 1.0, 0.0, 1.0, 0.5]


def _bce(reduction):
    return lambda m, p: m.nn.functional.binary_cross_entropy(p, T(m, p.device, _TARGETS), reduction=reduction)


def _ignored(loss, reduction="mean", some=False):
    def op(m, x):
        t = m.tensor([-100, 2 if some else -100, -100], device=x.device)
        return getattr(m.nn.functional, loss)(x if loss == "cross_entropy" else x.log_softmax(1), t,
                                              reduction=reduction)
    return op


def _logits(m, dev):
    return T(m, dev, DATA["m"], rg=True)


EDGE_GRADS = [
    Case("std of a constant row", grad_of(_const, lambda m, x: x.std(1))),
    Case("std of a constant, all", grad_of(lambda m, dev: T(m, dev, [3.0, 3.0], rg=True), lambda m, x: x.std())),
    Case("std of one element, correction 0", grad_of(lambda m, dev: T(m, dev, [3.0], rg=True),
                                                      lambda m, x: x.std(correction=0))),
    Case("var of a constant row", grad_of(_const, lambda m, x: x.var(1))),
    Case("std_mean of a constant row", grad_of(_const, lambda m, x: m.std_mean(x, 1)[0])),
    Case("F.normalize of a zero row", grad_of(_zero_rows, lambda m, x: m.nn.functional.normalize(x))),
    Case("F.normalize p=1 of a zero row", grad_of(_zero_rows, lambda m, x: m.nn.functional.normalize(x, 1.0))),
    Case("norm of a zero row", grad_of(_zero_rows, lambda m, x: x.norm(dim=1))),
    Case("cross_entropy, all ignored", grad_of(_logits, _ignored("cross_entropy"))),
    Case("cross_entropy, all ignored, sum", grad_of(_logits, _ignored("cross_entropy", "sum"))),
    Case("cross_entropy, some ignored", grad_of(_logits, _ignored("cross_entropy", some=True))),
    Case("nll_loss, all ignored", grad_of(_logits, _ignored("nll_loss"))),
    Case("nll_loss, all ignored, sum", grad_of(_logits, _ignored("nll_loss", "sum"))),
    Case("binary_cross_entropy at 0 and 1", grad_of(_probs, _bce("mean"))),
    Case("binary_cross_entropy at 0 and 1, none", grad_of(_probs, _bce("none"))),
    Case("BCELoss at 0 and 1", grad_of(_probs, lambda m, p: m.nn.BCELoss()(p, T(m, p.device, _TARGETS)))),
    Case("abs at NaN", grad_of(_nans, lambda m, x: x.abs())),
    Case("sign at NaN", grad_of(_nans, lambda m, x: x.sign())),
    Case("sgn at NaN", grad_of(_nans, lambda m, x: x.sgn())),
]


# =========================================================================== grad_fn names of x[...]
def _index_name(expr):
    def fn(m, dev):
        x = T(m, dev, DATA["c"], rg=True)
        y = eval(f"x[{expr}]", {"x": x})  # noqa: S307 - a fixed index expression of this table
        return y.grad_fn.name(), y.detach()
    return fn


INDEX_NAMES = [Case(f"x[{e}]", _index_name(e)) for e in (
    "0", ":, 1", "0:1", "None", "..., 0", ":", "0, :", "0, None", "None, 0", "0, 1:2", "1:2, 0", ":, :, None",
    "...", "0, 0, 0", "0, ...", "::2", "-1", "1, -2")]
INDEX_NAMES.append(Case("select(1, 2)", lambda m, dev: T(m, dev, DATA["c"], rg=True).select(1, 2).grad_fn.name()))


AUTOGRAD_CASES = INPLACE_ACTIVATIONS + INDEX_ASSIGN + VERSION_CHECKS + EDGE_GRADS + INDEX_NAMES

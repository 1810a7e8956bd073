"""``autograd.grad`` (a backward with targets) and ``functional_call``, against PyTorch: several inputs, leaves
and intermediates, unused inputs, hooks (only the nodes that lead to a target run), create_graph, retain_graph,
``backward(inputs=...)``; ``functional_call`` after parameters, buffers and submodules are added, removed or
replaced, and with tied weights."""
import numpy as np
import pytest

import ember
from ember.testing import assert_close

RNG = np.random.default_rng(0)
A = RNG.standard_normal((3, 4))
B = RNG.standard_normal((4, 2))
C = RNG.standard_normal((3, 2))


def _leaves(lib, device=None):
    kw = {"device": device} if lib is ember else {}
    return [lib.tensor(v, requires_grad=True, **kw) for v in (A, B, C)]


def _graph(lib, a, b, c, log=None):
    """A diamond: ``a`` reaches the loss by two paths, ``c`` by one, and a branch that leads to no target
    of the calls below (``side``)."""
    h = (a @ b).tanh()
    z = h * c + h.exp()
    side = (c * 3).sin()
    if log is not None:
        z.register_hook(lambda g: log.append("z") or g * 2)
        side.register_hook(lambda g: log.append("side"))
        z.grad_fn.register_hook(lambda gi, go: log.append("z-node"))
        side.grad_fn.register_prehook(lambda go: log.append("side-node"))
    return z, side, (z * a.sum()).sum() + side.sum()


def _both(fn, device):
    return fn(ember, device), fn(__import__("torch"), None)


def test_several_leaves_and_intermediates(device, torch):
    def run(lib, dev):
        a, b, c = _leaves(lib, dev)
        z, side, loss = _graph(lib, a, b, c)
        return lib.autograd.grad(loss, [c, a, z, b])

    got, want = _both(run, device)
    assert len(got) == 4
    for g, w in zip(got, want):
        assert_close(g, w)


def test_hooks_run_only_on_the_path_to_a_target(device, torch):
    def run(lib, dev):
        a, b, c = _leaves(lib, dev)
        log = []
        z, side, loss = _graph(lib, a, b, c, log)
        (ga, gb) = lib.autograd.grad(loss, [a, b])
        return log, ga, gb

    (log, ga, gb), (tlog, ta, tb) = _both(run, device)
    assert sorted(log) == sorted(tlog) == ["z", "z-node"]  # nothing of side's branch: it leads to no target
    assert_close(ga, ta)
    assert_close(gb, tb)


def test_intermediate_target_gets_its_hooked_gradient(device, torch):
    def run(lib, dev):
        a, b, c = _leaves(lib, dev)
        log = []
        z, side, loss = _graph(lib, a, b, c, log)
        (gz, gside) = lib.autograd.grad(loss, [z, side])
        return log, gz, gside

    (log, gz, gs), (tlog, tz, ts) = _both(run, device)
    assert sorted(log) == sorted(tlog)  # z's own node is a target with nothing needed under it: it does not run
    assert_close(gz, tz)
    assert_close(gs, ts)


def test_leaf_target_hooks_run_and_change_the_returned_gradient(device, torch):
    def run(lib, dev):
        a, b, c = _leaves(lib, dev)
        log = []
        a.register_hook(lambda g: log.append("a") or g * 3)
        c.register_hook(lambda g: log.append("c"))  # returns None: the gradient is kept
        b.register_post_accumulate_grad_hook(lambda t: log.append("b-acc"))  # grad() accumulates nothing
        z, side, loss = _graph(lib, a, b, c)
        ga, gb, gc = lib.autograd.grad(loss, [a, b, c])
        return log, ga, gb, gc, a.grad

    (log, *got, agrad), (tlog, *want, tagrad) = _both(run, device)
    assert sorted(log) == sorted(tlog) == ["a", "c"]
    assert agrad is None and tagrad is None
    for g, w in zip(got, want):
        assert_close(g, w)


def test_unused_inputs(device, torch):
    def run(lib, dev):
        a, b, c = _leaves(lib, dev)
        d = lib.ones(2, dtype=lib.float64, requires_grad=True, **({"device": dev} if dev else {}))
        loss = (a @ b).sum()
        with pytest.raises(RuntimeError, match="allow_unused"):
            lib.autograd.grad(loss, [a, d], retain_graph=True)
        got = lib.autograd.grad(loss, [d, a, c], allow_unused=True, retain_graph=True)
        zeros = lib.autograd.grad(loss, [d, a], materialize_grads=True)
        return got, zeros

    (got, zeros), (tgot, tzeros) = _both(run, device)
    assert got[0] is None and got[2] is None and tgot[0] is None
    assert_close(got[1], tgot[1])
    assert_close(zeros[0], tzeros[0])
    assert_close(zeros[1], tzeros[1])


def test_create_graph_and_retain_graph(device, torch):
    def run(lib, dev):
        a, b, c = _leaves(lib, dev)
        z, side, loss = _graph(lib, a, b, c)
        ga, gb = lib.autograd.grad(loss, [a, b], create_graph=True)
        assert ga.requires_grad and gb.requires_grad
        second = lib.autograd.grad((ga * gb.sum()).sum(), [b, c], allow_unused=True, retain_graph=True)
        again = lib.autograd.grad(loss, a, retain_graph=True)[0]  # create_graph kept the graph
        last = lib.autograd.grad(loss, a)[0]
        with pytest.raises(RuntimeError):  # the graph is freed now
            lib.autograd.grad(loss, a)
        return ga, gb, second, again, last

    got, want = _both(run, device)
    for g, w in zip(got[:2] + got[2] + got[3:], want[:2] + want[2] + want[3:]):
        assert_close(g.detach(), w.detach())


def test_leaf_root_and_several_roots(device, torch):
    def run(lib, dev):
        a, b, c = _leaves(lib, dev)
        own = lib.autograd.grad(a, a, grad_outputs=lib.ones_like(a))[0]
        y1, y2 = (a @ b), (a @ b).sum(1)
        both = lib.autograd.grad([y1, y2, c], [b, a], grad_outputs=[lib.ones_like(y1), lib.ones_like(y2),
                                                                   lib.ones_like(c)])
        with_root = lib.autograd.grad([(c * 2).sum(), c], [c], grad_outputs=[None, lib.ones_like(c)])[0]
        return own, both, with_root

    (own, both, root), (town, tboth, troot) = _both(run, device)
    assert_close(own, town)
    assert_close(both[0], tboth[0])
    assert_close(both[1], tboth[1])
    assert_close(root, troot)


def test_backward_with_inputs_accumulates_only_into_them(device, torch):
    def run(lib, dev):
        a, b, c = _leaves(lib, dev)
        log = []
        z, side, loss = _graph(lib, a, b, c, log)
        loss.backward(inputs=[b, c])
        return log, a.grad, b.grad, c.grad

    (log, ga, gb, gc), (tlog, ta, tb, tc) = _both(run, device)
    assert ga is None and ta is None
    assert sorted(log) == sorted(tlog)
    assert_close(gb, tb)
    assert_close(gc, tc)


def test_grad_leaves_dot_grad_untouched(device):
    a, b, c = _leaves(ember, device)
    _, _, loss = _graph(ember, a, b, c)
    ember.autograd.grad(loss, [a])
    assert a.grad is None and b.grad is None and c.grad is None


def test_gradient_edge_input(device, torch):
    def run(lib, dev):
        a, b, c = _leaves(lib, dev)
        h = (a @ b).tanh()
        loss = (h * c).sum()
        edge = lib.autograd.graph.get_gradient_edge(h)
        return lib.autograd.grad(loss, [edge, a])

    got, want = _both(run, device)
    assert_close(got[0], want[0])
    assert_close(got[1], want[1])


# --------------------------------------------------------------------------- functional_call
def _net(lib):
    lib.manual_seed(0)
    return lib.nn.Sequential(lib.nn.Linear(4, 3), lib.nn.ReLU(), lib.nn.Linear(3, 3))


def _same(ember_model, torch_model, torch):
    sd = {k: ember.tensor(v.detach().numpy()) for k, v in torch_model.state_dict().items()}
    ember_model.load_state_dict(sd)


def _check(em, tm, values, torch, device, tie_weights=True):
    x = RNG.standard_normal((2, 4)).astype(np.float32)
    ev = {k: ember.tensor(v, device=device) for k, v in values.items()}
    tv = {k: torch.tensor(v) for k, v in values.items()}
    if tie_weights:  # tied values must be the same object for both libraries
        for d in (ev, tv):
            for k in list(d):
                for j in list(d):
                    if k < j and values[k] is values[j]:
                        d[j] = d[k]
    got = ember.func.functional_call(em.to(device), ev, (ember.tensor(x, device=device),), tie_weights=tie_weights)
    want = torch.func.functional_call(tm, tv, (torch.tensor(x),), tie_weights=tie_weights)
    assert_close(got.detach(), want.detach())
    return got


def _pair(torch):
    tm, em = _net(torch), _net(ember)
    _same(em, tm, torch)
    return em, tm


def _vals(shape_of):
    return {k: RNG.standard_normal(s).astype(np.float32) for k, s in shape_of.items()}


def test_functional_call_follows_parameter_changes(device, torch):
    em, tm = _pair(torch)
    _check(em, tm, _vals({"0.weight": (3, 4), "2.bias": (3,)}), torch, device)
    # a parameter replaced, a new one added, one removed; the call sees each change
    for m, lib in ((em, ember), (tm, torch)):
        m[2].weight = lib.nn.Parameter(lib.ones(3, 3))
        m[0].register_parameter("extra", lib.nn.Parameter(lib.zeros(1)))
        del m[0].bias
        m[0].register_parameter("bias", None)
    _check(em, tm, _vals({"0.weight": (3, 4), "0.extra": (1,)}), torch, device)
    _check(em, tm, _vals({"2.weight": (3, 3)}), torch, device)
    assert_close(em[2].weight.detach(), np.ones((3, 3), np.float32))  # put back after the call


def test_functional_call_follows_buffer_and_submodule_changes(device, torch):
    em, tm = _pair(torch)
    _check(em, tm, _vals({"2.weight": (3, 3)}), torch, device)
    for m, lib in ((em, ember), (tm, torch)):
        m[1].register_buffer("scale", lib.ones(1))
        m[2] = lib.nn.Linear(3, 3)
        m.append(lib.nn.Linear(3, 2))
    _same(em, tm, torch)
    _check(em, tm, _vals({"1.scale": (1,), "3.weight": (2, 3), "2.bias": (3,)}), torch, device)
    for m in (em, tm):
        del m[3]
    _check(em, tm, _vals({"2.weight": (3, 3)}), torch, device)
    with pytest.raises(RuntimeError, match="Unexpected key"):
        ember.func.functional_call(em, {"3.weight": ember.ones(2, 3)}, (ember.ones(2, 4),), strict=True)


def test_functional_call_tied_weights(device, torch):
    em, tm = _pair(torch)
    w = RNG.standard_normal((3, 3)).astype(np.float32)
    _check(em, tm, {"2.weight": w}, torch, device)  # untied: only the last layer's weight
    for m in (em, tm):
        m.insert(2, m[2])  # the same Linear under two names: its weight and bias are tied
    _same(em, tm, torch)
    _check(em, tm, {"2.weight": w}, torch, device)  # tied: both layers use the given weight
    _check(em, tm, {"3.weight": w, "3.bias": w[0]}, torch, device)
    _check(em, tm, {"2.weight": w}, torch, device, tie_weights=False)
    with pytest.raises(ValueError, match="tied"):
        ember.func.functional_call(em, {"2.weight": ember.tensor(w), "3.weight": ember.tensor(w + 1)},
                                   (ember.ones(2, 4),))
    for m, lib in ((em, ember), (tm, torch)):  # untied again: a new module at one of the names
        m[3] = lib.nn.Linear(3, 3)
    _same(em, tm, torch)
    _check(em, tm, {"2.weight": w}, torch, device)


def test_functional_call_under_vmap_grad_matches_torch(device, torch):
    em, tm = _pair(torch)
    x = RNG.standard_normal((5, 4)).astype(np.float32)
    y = RNG.integers(0, 3, 5)

    def per_sample(lib, model, dev):
        kw = {"device": dev} if dev else {}
        params = {k: v.detach() for k, v in model.named_parameters()}

        def loss(p, s, t):
            return lib.nn.functional.cross_entropy(lib.func.functional_call(model, p, (s.unsqueeze(0),)),
                                                   t.unsqueeze(0))
        return lib.func.vmap(lib.func.grad(loss), in_dims=(None, 0, 0))(params, lib.tensor(x, **kw),
                                                                       lib.tensor(y, **kw))

    got = per_sample(ember, em.to(device), device)
    want = per_sample(torch, tm, None)
    assert set(got) == set(want)
    for k in want:
        assert_close(got[k], want[k], rtol=1e-5, atol=1e-6)

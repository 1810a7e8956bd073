"""MultiheadAttention and the Transformer family against PyTorch with identical weights."""
import numpy as np
import pytest

import ember
from ember.testing import assert_close

nn = ember.nn
pytestmark = pytest.mark.filterwarnings("ignore:enable_nested_tensor is True")


def _copy(e_mod, t_mod, device, dtype=ember.float32):
    e_mod.load_state_dict({k: ember.tensor(v.detach().numpy(), dtype=dtype, device=device)
                           for k, v in t_mod.state_dict().items()})


def _x(torch, shape, device, seed=0, dtype="float32"):
    a = np.random.default_rng(seed).standard_normal(shape).astype(dtype)
    return ember.tensor(a, device=device, requires_grad=True), torch.tensor(a, requires_grad=True)


def _grads_match(e_mod, t_mod):
    tp = dict(t_mod.named_parameters())
    for name, p in e_mod.named_parameters():
        if p.grad is None:
            assert tp[name].grad is None or float(tp[name].grad.abs().max()) == 0, name
            continue
        assert_close(p.grad, tp[name].grad, rtol=1e-4, atol=1e-5, msg=name)


def _bool_mask(torch, shape, seed):
    m = np.random.default_rng(seed).random(shape) < 0.3
    m[..., 0] = False  # every query keeps at least one key
    return ember.tensor(m), torch.tensor(m)


MHA_CASES = [
    ("plain", dict(), dict()),
    ("batch_first", dict(batch_first=True), dict()),
    ("kdim_vdim", dict(kdim=3, vdim=5), dict()),
    ("bias_kv_zero_attn", dict(add_bias_kv=True, add_zero_attn=True), dict()),
    ("no_bias", dict(bias=False), dict()),
    ("per_head_weights", dict(), dict(average_attn_weights=False)),
]


@pytest.mark.parametrize("name,ctor,call", MHA_CASES, ids=[c[0] for c in MHA_CASES])
def test_multihead_attention_matches_torch(device, torch, name, ctor, call):
    tm = torch.nn.MultiheadAttention(8, 2, **ctor)
    em = nn.MultiheadAttention(8, 2, device=device, **ctor)
    assert list(em.state_dict().keys()) == list(tm.state_dict().keys())
    _copy(em, tm, device)
    bf = ctor.get("batch_first", False)
    L, S, N = 4, 5, 3
    qs, ks = ((N, L, 8), (N, S, ctor.get("kdim", 8))) if bf else ((L, N, 8), (S, N, ctor.get("kdim", 8)))
    vs = ks[:-1] + (ctor.get("vdim", 8),)
    (eq, tq), (ek, tk), (ev, tv) = _x(torch, qs, device, 1), _x(torch, ks, device, 2), _x(torch, vs, device, 3)
    eo, ew = em(eq, ek, ev, **call)
    to, tw = tm(tq, tk, tv, **call)
    assert_close(eo, to, rtol=1e-4, atol=1e-5)
    assert_close(ew, tw, rtol=1e-4, atol=1e-5)
    (eo.sum() + (ew * ew).sum()).backward()
    (to.sum() + (tw * tw).sum()).backward()
    for e, t in ((eq, tq), (ek, tk), (ev, tv)):
        assert_close(e.grad, t.grad, rtol=1e-4, atol=1e-5)
    _grads_match(em, tm)


@pytest.mark.parametrize("kind", ["bool_attn", "float_attn", "key_padding", "both", "causal_3d"])
def test_multihead_attention_masks(device, torch, kind):
    tm = torch.nn.MultiheadAttention(8, 2)
    em = nn.MultiheadAttention(8, 2, device=device)
    _copy(em, tm, device)
    L, N = 4, 3
    (eq, tq) = _x(torch, (L, N, 8), device, 1)
    kw_e, kw_t = {}, {}
    if kind in ("bool_attn", "both"):
        e, t = _bool_mask(torch, (L, L), 5)
        kw_e["attn_mask"], kw_t["attn_mask"] = e.to(device), t
    if kind == "float_attn":
        a = np.random.default_rng(6).standard_normal((L, L)).astype(np.float32)
        kw_e["attn_mask"], kw_t["attn_mask"] = ember.tensor(a, device=device), torch.tensor(a)
    if kind in ("key_padding", "both"):
        e, t = _bool_mask(torch, (N, L), 7)
        kw_e["key_padding_mask"], kw_t["key_padding_mask"] = e.to(device), t
    if kind == "causal_3d":
        m = np.triu(np.ones((L, L), bool), 1)[None].repeat(N * 2, 0)
        kw_e["attn_mask"], kw_t["attn_mask"] = ember.tensor(m, device=device), torch.tensor(m)
    eo, ew = em(eq, eq, eq, **kw_e)
    to, tw = tm(tq, tq, tq, **kw_t)
    assert_close(eo, to, rtol=1e-4, atol=1e-5)
    assert_close(ew, tw, rtol=1e-4, atol=1e-5)
    eo.sum().backward()
    to.sum().backward()
    assert_close(eq.grad, tq.grad, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("activation", ["relu", "gelu"])
def test_transformer_matches_torch(device, torch, norm_first, activation):
    kw = dict(d_model=8, nhead=2, num_encoder_layers=2, num_decoder_layers=1, dim_feedforward=16, dropout=0.0,
              activation=activation, norm_first=norm_first, batch_first=True)
    tm = torch.nn.Transformer(**kw)
    em = nn.Transformer(device=device, **kw)
    assert [(k, tuple(v.shape)) for k, v in em.state_dict().items()] == \
        [(k, tuple(v.shape)) for k, v in tm.state_dict().items()]
    _copy(em, tm, device)
    (es, ts), (et, tt) = _x(torch, (2, 5, 8), device, 1), _x(torch, (2, 4, 8), device, 2)
    emask = nn.Transformer.generate_square_subsequent_mask(4, device=device)
    tmask = torch.nn.Transformer.generate_square_subsequent_mask(4)
    assert_close(emask, tmask)
    e_pad, t_pad = ember.tensor([[False] * 4 + [True], [False] * 5], device=device), \
        torch.tensor([[False] * 4 + [True], [False] * 5])
    eo = em(es, et, tgt_mask=emask, src_key_padding_mask=e_pad, memory_key_padding_mask=e_pad)
    to = tm(ts, tt, tgt_mask=tmask, src_key_padding_mask=t_pad, memory_key_padding_mask=t_pad)
    assert_close(eo, to, rtol=1e-4, atol=1e-4)
    eo.sum().backward()
    to.sum().backward()
    assert_close(es.grad, ts.grad, rtol=1e-3, atol=1e-4)
    _grads_match(em, tm)


def test_encoder_stack_and_sdpa(device, torch):
    tl = torch.nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0)
    tm = torch.nn.TransformerEncoder(tl, 2)
    em = nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, device=device), 2)
    _copy(em, tm, device)
    ex, tx = _x(torch, (5, 2, 8), device)
    assert_close(em(ex, is_causal=False), tm(tx), rtol=1e-4, atol=1e-5)
    (eq, tq), (ek, tk), (ev, tv) = [_x(torch, (2, 2, 4, 3), device, s) for s in (1, 2, 3)]
    F, tF = nn.functional, torch.nn.functional
    assert_close(F.scaled_dot_product_attention(eq, ek, ev, is_causal=True),
                 tF.scaled_dot_product_attention(tq, tk, tv, is_causal=True), rtol=1e-4, atol=1e-5)


def test_attention_gradcheck(device):
    em = nn.MultiheadAttention(4, 2, device=device, dtype=ember.float64)
    x = ember.randn(3, 2, 4, dtype=ember.float64, device=device, requires_grad=True)
    assert ember.autograd.gradcheck(lambda t: em(t, t, t)[0], (x,))
    assert ember.autograd.gradgradcheck(lambda t: em(t, t, t)[0].sum(), (x,))


def test_bad_masks_are_clear(device):
    em = nn.MultiheadAttention(8, 2, device=device)
    x = ember.randn(4, 3, 8, device=device)
    with pytest.raises(RuntimeError, match="The shape of the 2D attn_mask is \\[3, 3\\], but should be \\[4, 4\\]"):
        em(x, x, x, attn_mask=ember.zeros(3, 3, device=device))
    with pytest.raises(AssertionError, match="key_padding_mask shape"):
        em(x, x, x, key_padding_mask=ember.zeros(4, 3, dtype=ember.bool, device=device))
    with pytest.raises(AssertionError, match="only bool and floating types"):
        em(x, x, x, attn_mask=ember.zeros(4, 4, dtype=ember.int64, device=device))
    with pytest.raises(AssertionError, match="embed_dim must be divisible by num_heads"):
        nn.MultiheadAttention(7, 2)


def test_reprs_match_torch(torch):
    for name in ("TransformerEncoderLayer", "TransformerDecoderLayer"):
        assert repr(getattr(nn, name)(8, 2, 16)) == repr(getattr(torch.nn, name)(8, 2, 16))
    assert repr(nn.Transformer(8, 2, 1, 1, 16)) == repr(torch.nn.Transformer(8, 2, 1, 1, 16))

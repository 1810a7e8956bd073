"""The classes of per-dtype disagreement with PyTorch that the dtype sweep (``fuzz.sweep_dtypes``) found, each
swept over its ops and every dtype against PyTorch 2.13: the same dtypes compute (with the same result dtype and
values) and the same ones raise (with the same exception class)."""
import numpy as np
import pytest

import ember
from ember.testing.compare import has_dtype

torch = pytest.importorskip("torch")

DTYPES = ("float32", "float64", "float16", "bfloat16", "int64", "int32", "uint8", "bool", "complex64")


def _input(m, dtype, device=None, shape=(2, 4)):
    data = np.array([[-1.5, 0.0, 0.25, 2.0], [3.0, -0.5, 1.0, 0.75]]).reshape(-1)[:int(np.prod(shape))]
    t = m.tensor(data.reshape(shape), dtype=m.float64)
    t = t > 0 if dtype == "bool" else t.to(getattr(m, dtype))
    return t if device is None else t.to(device)


def _host(t):
    t = t.detach().cpu()
    if str(t.dtype).endswith("bfloat16"):
        t = t.float()
    return np.asarray(t.numpy() if isinstance(t, ember.Tensor) else t.resolve_conj().numpy())


def _have(device, names):
    """The dtypes of ``names`` that ``device``'s backend has."""
    return [d for d in names if has_dtype(device, getattr(ember, d))]


def _outcome(m, fn, x):
    try:
        return fn(m, x)
    except Exception as exc:  # noqa: BLE001 - the refusal is the outcome compared
        return exc


def _agree(fn, device, shape=(2, 4)):
    """``fn(m, x)`` on every dtype agrees between ember and PyTorch; returns the dtypes PyTorch refuses."""
    refused = []
    for dtype in _have(device, DTYPES):
        want = _outcome(torch, fn, _input(torch, dtype, shape=shape))
        got = _outcome(ember, fn, _input(ember, dtype, device, shape))
        if isinstance(want, Exception):
            refused.append(dtype)
            base = next(k for k in type(want).__mro__ if k.__module__ == "builtins")
            assert isinstance(got, base), (dtype, want, got)
            continue
        assert not isinstance(got, Exception), (dtype, got)
        assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1], (dtype, got.dtype, want.dtype)
        tol = 2e-2 if dtype in ("float16", "bfloat16") else 1e-5
        np.testing.assert_allclose(_host(got), _host(want), rtol=tol, atol=tol, err_msg=dtype)
    return refused


F = {"elu": lambda m, x: m.nn.functional.elu(x), "celu_": lambda m, x: m.nn.functional.celu(x * 1, inplace=True),
     "selu": lambda m, x: m.selu(x), "leaky_relu_": lambda m, x: m.nn.functional.leaky_relu_(x * 1),
     "rrelu": lambda m, x: m.rrelu(x), "rrelu_": lambda m, x: m.nn.functional.rrelu_(x * 1),
     "hardsigmoid": lambda m, x: m.nn.functional.hardsigmoid(x),
     "hardswish": lambda m, x: m.nn.functional.hardswish(x), "mish": lambda m, x: m.nn.functional.mish(x),
     "gelu": lambda m, x: m.nn.functional.gelu(x), "hardshrink": lambda m, x: m.nn.functional.hardshrink(x),
     "softshrink": lambda m, x: m.nn.functional.softshrink(x), "glu": lambda m, x: m.nn.functional.glu(x),
     "logsigmoid": lambda m, x: m.nn.functional.logsigmoid(x),
     "prelu": lambda m, x: m.nn.functional.prelu(x, m.ones(1, dtype=x.dtype, device=x.device))}


@pytest.mark.parametrize("name", sorted(F))
def test_floating_activations_refuse_what_pytorch_kernels_lack(name, device):
    """Activations whose PyTorch kernels have floating code only refuse integer, bool and complex input
    (NotImplementedError), empty input too, and compute the floating dtypes as PyTorch does."""
    assert _agree(F[name], device) == _have(device, ["int64", "int32", "uint8", "bool", "complex64"])
    assert _agree(F[name], device, shape=(0, 4)) == _have(device, ["int64", "int32", "uint8", "bool", "complex64"])


def test_silu_and_hardtanh_dtypes(device):
    """silu also computes complex; hardtanh (and relu6) computes integers, refuses bool (RuntimeError), uint8
    with a negative limit (RuntimeError) and complex (NotImplementedError)."""
    assert _agree(lambda m, x: m.nn.functional.silu(x), device) == _have(device, ["int64", "int32", "uint8", "bool"])
    assert _agree(lambda m, x: m.nn.functional.hardtanh(x), device) == _have(device, ["uint8", "bool", "complex64"])
    assert _agree(lambda m, x: m.nn.functional.hardtanh(x, -0.3, 1.0), device) == _have(device, ["bool", "complex64"])
    assert _agree(lambda m, x: m.nn.functional.relu6(x), device) == _have(device, ["bool", "complex64"])


RELU = {"relu": lambda m, x: m.relu(x), "relu_": lambda m, x: x.clone().relu_(),
        "functional_inplace": lambda m, x: m.nn.functional.relu(x.clone(), inplace=True),
        "module": lambda m, x: m.nn.ReLU()(x), "empty": lambda m, x: m.relu(x[:0])}


@pytest.mark.parametrize("form", sorted(RELU))
def test_relu_refuses_bool_and_complex(form, device):
    """relu (PyTorch's clamp_min) computes integers and floats, refuses bool (RuntimeError) and complex
    (NotImplementedError) with PyTorch's messages, in every form, empty input too."""
    assert _agree(RELU[form], device) == _have(device, ["bool", "complex64"])
    for dtype in _have(device, ["bool", "complex64"]):
        x = _input(ember, dtype, device)
        want = _outcome(torch, RELU[form], _input(torch, dtype))
        got = _outcome(ember, RELU[form], x)
        assert (type(got), str(got)) == (type(want), str(want))
        np.testing.assert_array_equal(_host(x), _host(_input(ember, dtype, device)))  # untouched


POINTWISE = {"abs": (lambda m, x: m.abs(x), ["bool"]),
             "softsign": (lambda m, x: m.nn.functional.softsign(x), ["bool"]),
             "deg2rad": (lambda m, x: m.deg2rad(x), ["complex64"]),
             "rad2deg": (lambda m, x: m.rad2deg(x), ["complex64"]),
             "isneginf": (lambda m, x: m.isneginf(x), ["complex64"]),
             "isposinf": (lambda m, x: m.isposinf(x), ["complex64"]),
             "xlogy": (lambda m, x: m.xlogy(x, x), ["complex64"]),
             "xlogy_number": (lambda m, x: m.xlogy(x, 2.0), ["complex64"]),
             "clamp_tensors": (lambda m, x: m.clamp(x, x, x), ["bool", "complex64"]),
             "float_power": (lambda m, x: m.float_power(x, 2), []),
             "float_power_complex_number": (lambda m, x: m.float_power(x, 0.5j), [])}


@pytest.mark.parametrize("name", sorted(POINTWISE))
def test_pointwise_dtypes(name, device):
    """Pointwise kernels refuse the dtypes PyTorch's refuse (bool abs, complex xlogy/deg2rad/isneginf, bool
    clamp with tensor bounds) and float_power of a complex operand is complex128."""
    fn, refused = POINTWISE[name]
    assert _agree(fn, device) == _have(device, refused)


def _grad_conv(m, x, kind, dilation):
    g, v = m.nn.grad, x[1, 0]  # (a 0-d tensor of the swept dtype scales one operand)
    if kind == "1d_input":
        return g.conv1d_input((2, 4, 9), _ones(m, x, (6, 2, 3)) * v, _ones(m, x, (2, 6, 5)), 2, 1, 1, 2)
    if kind == "2d_input":
        return g.conv2d_input((1, 2, 6, 5), _ones(m, x, (3, 2, 3, 2)), _ones(m, x, (1, 3, 4, 3)) * v, 1, (1, 0),
                              dilation)
    if kind == "2d_weight":
        return g.conv2d_weight(_ones(m, x, (1, 2, 5, 5)) * v, (3, 2, 3, 3), _ones(m, x, (1, 3, 3, 3)),
                               dilation=dilation)
    return g.conv3d_weight(_ones(m, x, (1, 1, 3, 3, 3)) * v, (2, 1, 2, 2, 2), _ones(m, x, (1, 2, 2, 2, 2)))


def _ones(m, like, shape):
    return m.ones(shape, dtype=like.dtype, device=like.device)


@pytest.mark.parametrize("kind, dilation, refused", [
    ("1d_input", 1, ["int64", "int32", "uint8", "bool", "complex64"]),
    ("2d_input", 2, ["int32", "uint8", "bool", "complex64"]),  # (the dilated kernel also computes int64)
    ("2d_weight", 1, ["int64", "int32", "uint8", "bool", "complex64"]),
    ("3d_weight", 1, ["int64", "int32", "uint8", "bool", "complex64"])])
def test_convolution_gradient_functions_dtypes(kind, dilation, refused, device):
    """``nn.grad``'s convolution gradients compute the dtypes of PyTorch's backward kernels only."""
    assert _agree(lambda m, x: _grad_conv(m, x, kind, dilation), device) == _have(device, refused)


@pytest.mark.parametrize("center, pad_mode", [(True, "reflect"), (True, "constant"), (False, "reflect")])
def test_stft_refuses_integer_and_bool_input(center, pad_mode, device):
    """stft of integer and bool input raises as PyTorch's (bool under reflection padding: its pad's
    NotImplementedError, a RuntimeError otherwise)."""
    def fn(m, x):
        x = x.reshape(-1).repeat(3)
        return m.stft(x, 8, hop_length=4, window=m.ones(8, dtype=x.dtype, device=x.device), center=center,
                      pad_mode=pad_mode, return_complex=True)

    refused = _agree(fn, device)
    assert {"int64", "int32", "uint8", "bool"} <= set(refused)


POOLS = {"avg_pool1d": (lambda m, x: m.nn.functional.avg_pool1d(x.reshape(2, 1, 4), 3, 1, 1), (2, 4),
                        ["int32", "uint8", "bool", "complex64"]),
         "avg_pool2d": (lambda m, x: m.nn.functional.avg_pool2d(x.reshape(1, 2, 2, 2), 2, 1, 1, False, False),
                        (2, 4), ["int32", "uint8", "bool", "complex64"]),
         "avg_pool2d_divisor": (lambda m, x: m.nn.functional.avg_pool2d(x.reshape(1, 1, 2, 4), 2,
                                                                          divisor_override=3),
                                (2, 4), ["int32", "uint8", "bool", "complex64"]),
         "avg_pool3d": (lambda m, x: m.nn.functional.avg_pool3d(x.reshape(1, 1, 2, 2, 2), 2), (2, 4),
                        ["float16", "bfloat16", "int32", "uint8", "bool", "complex64"]),
         "lp_pool1d": (lambda m, x: m.nn.functional.lp_pool1d(x.reshape(2, 1, 4), 2, 2), (2, 4),
                       ["int32", "uint8", "complex64"]),
         "adaptive_avg_pool2d": (lambda m, x: m.nn.functional.adaptive_avg_pool2d(x.reshape(1, 1, 2, 4), 3),
                                 (2, 4), ["int64", "int32", "uint8", "bool", "complex64"]),
         "adaptive_avg_pool2d_global": (lambda m, x: m.nn.functional.adaptive_avg_pool2d(x.reshape(1, 1, 2, 4), 1),
                                        (2, 4), ["int64", "int32", "uint8", "bool"])}


@pytest.mark.parametrize("name", sorted(POOLS))
def test_average_pooling_dtypes(name, device):
    """Average pooling computes PyTorch's dtypes: int64 too (its mean truncated toward zero, an int64 result),
    the 3-d kernel no half precision; adaptive averages floating only."""
    fn, shape, refused = POOLS[name]
    assert _agree(fn, device, shape) == _have(device, refused)


@pytest.mark.parametrize("mode", ["nearest", "bilinear", "bicubic"])
def test_interpolate_dtypes(mode, device):
    """interpolate's kernels compute floating dtypes and uint8 images (nearest, bilinear, bicubic); the 1-d
    linear one floating only; a uint8 image is rounded from the floating result (bilinear: within one of
    PyTorch's fixed-point kernel)."""
    def fn(m, x):
        x = x.reshape(1, 1, 2, 4)
        return m.nn.functional.interpolate(x * 40 if x.dtype == m.uint8 else x, size=(3, 3), mode=mode)

    def linear(m, x):
        return m.nn.functional.interpolate(x.reshape(1, 2, 4), scale_factor=2, mode="linear")

    if mode == "bicubic":  # (PyTorch's uint8 bicubic has other coefficients than its floating one: dtype only)
        refused = _agree(lambda m, x: fn(m, x)[..., :0] if x.dtype == m.uint8 else fn(m, x), device)
        assert refused == _have(device, ["int64", "int32", "bool", "complex64"])
    else:
        assert _agree(fn, device) == _have(device, ["int64", "int32", "bool", "complex64"])
    assert _agree(linear, device) == _have(device, ["int64", "int32", "uint8", "bool", "complex64"])


NN = {"linear_bool": (lambda m, x: m.nn.functional.linear(x, x), ["bool"]),
      "linear_vector_bool": (lambda m, x: m.nn.functional.linear(x, x[0]), ["bool"]),
      "group_norm": (lambda m, x: m.nn.functional.group_norm(x.reshape(1, 2, 4), 2),
                     ["int64", "int32", "uint8", "bool", "complex64"]),
      "group_norm_empty_batch": (lambda m, x: m.nn.functional.group_norm(x[:0].reshape(0, 2, 2), 2),
                                 ["int64", "int32", "uint8", "bool", "complex64"]),
      "cosine_similarity": (lambda m, x: m.nn.functional.cosine_similarity(x, x),
                            ["int64", "int32", "uint8", "bool", "complex64"]),
      "binary_cross_entropy": (lambda m, x: m.nn.functional.binary_cross_entropy(x.abs() / 4, x.abs() / 4)
                               if x.dtype != m.bool else m.nn.functional.binary_cross_entropy(x, x),
                               ["uint8", "bool"]),  # (integers: float32 by the division; uint8's wrapped -1.5 > 1)
      "binary_cross_entropy_empty": (lambda m, x: m.nn.functional.binary_cross_entropy(x[:0], x[:0], reduction="sum"),
                                     ["int64", "int32", "uint8", "bool", "complex64"]),
      "binary_cross_entropy_target_dtype": (lambda m, x: m.nn.functional.binary_cross_entropy(
          x.abs() / 4, m.full((2, 4), 0.5, dtype=m.float64, device=x.device)), DTYPES)}


@pytest.mark.parametrize("name", sorted(NN))
def test_nn_function_dtypes(name, device):
    """linear of bool (PyTorch's GEMM kernels have none), group norm floating only (an empty batch too), cosine
    similarity of a non-floating common dtype (RuntimeError), binary cross entropy floating only and refusing a
    target of another dtype."""
    fn, refused = NN[name]
    want = [d for d in refused if d != "float64"] if name.endswith("target_dtype") else refused
    assert _agree(fn, device) == _have(device, want)


REDUCTIONS = {"histogram": (lambda m, x: m.histogram(x, 4)[0],
                            ["float16", "bfloat16", "int64", "int32", "uint8", "bool", "complex64"]),
              "histogram_edges": (lambda m, x: m.histogram(x, m.tensor([-1.0, 0.5, 2.0]).to(x))[0],
                                  ["int64", "int32", "uint8", "bool", "complex64"]),
              "histogram_range": (lambda m, x: m.histogram(x, 3, range=(0.0, 2.0))[0],
                                  ["int64", "int32", "uint8", "bool", "complex64"]),
              "histogram_empty": (lambda m, x: m.histogram(x[:0], 4)[0],
                                  ["int64", "int32", "uint8", "bool", "complex64"]),
              "gradient": (lambda m, x: m.gradient(x)[0], ["uint8", "bool"])}


@pytest.mark.parametrize("name", sorted(REDUCTIONS))
def test_reduction_dtypes(name, device):
    """histogram: floating input only, half precision only with bin edges or a range given (or empty input); gradient
    refuses uint8 and bool."""
    fn, refused = REDUCTIONS[name]
    assert _agree(fn, device) == _have(device, refused)


EXTREMES = {"amax": lambda m, x: m.amax(x), "amin_dim": lambda m, x: m.amin(x, 1), "max": lambda m, x: m.max(x),
            "aminmax": lambda m, x: m.aminmax(x)[0], "aminmax_empty": lambda m, x: m.aminmax(x[:0], dim=1)[0],
            "rms_norm": lambda m, x: m.nn.functional.rms_norm(x, (4,))}


@pytest.mark.parametrize("name", sorted(EXTREMES))
def test_kernel_refusals_are_not_implemented_errors(name, device):
    """Where PyTorch's kernel has no code for a dtype (complex extremes, integer rms_norm) ember raises its
    NotImplementedError, not a bare RuntimeError."""
    refused = _agree(EXTREMES[name], device)
    assert refused, name
    for dtype in refused:
        got = _outcome(ember, EXTREMES[name], _input(ember, dtype, device))
        assert type(got) is NotImplementedError, (dtype, got)


@pytest.mark.parametrize("length", [1, 5])
def test_complex_windows(length, device):
    """A complex window of one sample is computed, a longer one refused as PyTorch's arange refuses it."""
    def fn(m, x):
        return m.hann_window(length, dtype=x.dtype, device=x.device) + m.hamming_window(length, dtype=x.dtype,
                                                                                           device=x.device)

    refused = _agree(fn, device)
    assert "complex64" in refused if length > 1 else "complex64" not in refused


@pytest.mark.parametrize("equation, shapes", [("bij,bjk->bik", [(2, 2, 3), (2, 3, 4)]), ("ij,j->i", [(2, 3), (3,)]),
                                              ("i,j->ij", [(2,), (3,)]), ("ij,ij->ij", [(2, 3), (2, 3)]),
                                              ("ii->i", [(3, 3)]), ("ij,jk->ik", [(2, 0), (0, 3)])])
def test_einsum_of_bool(equation, shapes, device):
    """einsum of bool operands refuses a contraction between operands (PyTorch's bmm has no bool code) unless
    one is empty, and computes products and diagonals."""
    def run(m):
        try:
            return m.einsum(equation, *[m.ones(s, dtype=m.bool, device=device if m is ember else "cpu")
                                        for s in shapes])
        except NotImplementedError as exc:
            return exc

    want, got = run(torch), run(ember)
    assert isinstance(got, NotImplementedError) == isinstance(want, NotImplementedError), (got, want)
    if not isinstance(want, Exception):
        assert got.dtype == ember.bool and _host(got).tolist() == _host(want).tolist()


@pytest.mark.parametrize("transposed", [False, True])
def test_aten_convolution_refuses_complex(transposed, device):
    """``torch.convolution`` (PyTorch's aten kernel) refuses complex input; the functional conv1d composes it."""
    def fn(m, x):
        w = m.ones((1, 2, 3) if not transposed else (2, 1, 3), dtype=x.dtype, device=x.device)
        return m.convolution(x.reshape(1, 2, 4), w, None, [1], [0], [1], transposed, [0], 1)

    assert "complex64" in _agree(fn, device)
    assert "complex64" not in _agree(lambda m, x: m.nn.functional.conv1d(
        x.reshape(1, 2, 4), m.ones(1, 2, 3, dtype=x.dtype, device=x.device)), device)


def test_sub_with_alpha_of_bfloat16(device):
    """sub/rsub with alpha on bfloat16 tensors computes (its alpha, held as a bfloat16 number, was refused by mul)
    within a rounding of PyTorch's single-rounding kernel."""
    assert _agree(lambda m, x: m.rsub(x, x[0], alpha=2), device) == _have(device, ["bool"])
    assert _agree(lambda m, x: m.sub(x, x[1], alpha=3), device) == _have(device, ["bool"])


def test_angle_of_real_half_precision_keeps_dtype(device):
    """angle of a real input keeps float16 and bfloat16 (0 or pi in the input's dtype)."""
    assert _agree(lambda m, x: m.angle(x), device) == []


def test_mean_of_empty_keeps_dtype(device):
    """The mean of an empty bfloat16 input is a bfloat16 NaN, as PyTorch's (it was float32)."""
    assert _agree(lambda m, x: m.mean(x[:0], 0), device) == _have(device, ["int64", "int32", "uint8", "bool"])
    assert _agree(lambda m, x: x[:0].mean(), device) == _have(device, ["int64", "int32", "uint8", "bool"])

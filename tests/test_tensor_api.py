"""PyTorch's tensor-level names of shape, indexing, creation and reductions against PyTorch on every backend: bad
input and the behaviour rows cannot show (storage, metadata, legacy factories, files, safe globals); their rows,
every check, run in tests/test_kit.py with ember.testing.rows_shape, rows_indexing, rows_reduction and rows_creation.
"""
import io
import pickle

import numpy as np
import pytest

import ember
from ember.testing import assert_close
from ember.testing.case import bad_input_test

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.filterwarnings(r"ignore:index_reduce\(\) is in beta")  # PyTorch's own warning


def _t(m, d, data, **kw):
    return m.tensor(data, device=d if m.__name__ == "ember" else "cpu", **kw)


def _z(m, d, *shape, **kw):
    return m.zeros(*shape, device=d if m.__name__ == "ember" else "cpu", **kw)


# bad input: (name, call, exception, message pattern); torch raises the same exception type
BAD = [
    ("tensor_split_0d", lambda m, d: m.tensor_split(_t(m, d, 1.0), 2), RuntimeError, "at least a 1-dimensional"),
    ("tensor_split_zero", lambda m, d: _z(m, d, 3).tensor_split(0), RuntimeError, "larger than 0, got 0"),
    ("hsplit_indivisible", lambda m, d: m.hsplit(_z(m, d, 2, 3), 2), RuntimeError,
     r"hsplit attempted to split along dimension 1, but the size of the dimension 3 is not divisible"),
    ("vsplit_1d", lambda m, d: m.vsplit(_z(m, d, 4), 2), RuntimeError, "vsplit requires a tensor with at least 2"),
    ("dsplit_2d", lambda m, d: m.dsplit(_z(m, d, 2, 2), 2), RuntimeError, "dsplit requires a tensor with at least 3"),
    ("rot90_dims", lambda m, d: m.rot90(_z(m, d, 2, 2), 1, (0, 0)), RuntimeError, "expected rotation dims to be"),
    ("rot90_1d", lambda m, d: m.rot90(_z(m, d, 2)), RuntimeError, "expected total dims >= 2"),
    ("repeat_interleave_negative", lambda m, d: _z(m, d, 2).repeat_interleave(-1), RuntimeError,
     "repeats can not be negative"),
    ("repeat_interleave_size", lambda m, d: _z(m, d, 3).repeat_interleave(_t(m, d, [1, 2])), RuntimeError,
     r"repeats must have the same size as input along dim, but got repeats.size\(0\) = 2 and input.size\(0\) = 3"),
    ("repeat_interleave_output_size", lambda m, d: _z(m, d, 2).repeat_interleave(_t(m, d, [1, 2]), output_size=4),
     RuntimeError, "allocated size does not match required size"),
    ("repeat_interleave_float", lambda m, d: _z(m, d, 2).repeat_interleave(_t(m, d, [1.0, 2.0])), RuntimeError,
     "repeats has to be Long or Int tensor"),
    ("adjoint_1d", lambda m, d: _z(m, d, 3).adjoint(), RuntimeError, "only supported on matrices"),
    ("mH_1d", lambda m, d: _z(m, d, 3).mH, RuntimeError, "tensor.mH is only supported on matrices"),
    ("block_diag_3d", lambda m, d: m.block_diag(_z(m, d, 1, 1, 1)), RuntimeError,
     "Input tensors must have 2 or fewer dimensions. Input 0 has 3 dimensions"),
    ("cartesian_prod_2d", lambda m, d: m.cartesian_prod(_z(m, d, 2, 2)), RuntimeError, "Expect a 1D vector"),
    ("combinations_2d", lambda m, d: m.combinations(_z(m, d, 2, 2)), RuntimeError, "Expect a 1D vector"),
    ("select_scatter_shape", lambda m, d: m.select_scatter(_z(m, d, 3, 4), _z(m, d, 3), 0, 0), RuntimeError,
     r"expected src to have a size equal to the slice of self. src size = \[3\], slice size = \[4\]"),
    ("slice_scatter_shape", lambda m, d: m.slice_scatter(_z(m, d, 4), _z(m, d, 3), 0, 2), RuntimeError,
     "expected src to have a size equal to the slice of self"),
    ("diagonal_scatter_shape", lambda m, d: m.diagonal_scatter(_z(m, d, 3, 3), _z(m, d, 2)), RuntimeError,
     "expected src to have a size equal to the slice of self"),
    ("index_reduce_sum", lambda m, d: _z(m, d, 3).index_reduce(0, _t(m, d, [0]), _z(m, d, 1), "sum"), RuntimeError,
     "Expected reduce to be one of prod, mean, amax or amin"),
    ("index_reduce_count", lambda m, d: _z(m, d, 3).index_reduce(0, _t(m, d, [0, 1]), _z(m, d, 1), "prod"),
     RuntimeError, "Number of indices"),
    ("put_float_index", lambda m, d: _z(m, d, 3).put(_t(m, d, [0.0]), _z(m, d, 1)), RuntimeError,
     "Expected a long tensor for index"),
    ("put_numel", lambda m, d: _z(m, d, 3).put(_t(m, d, [0, 1]), _z(m, d, 3)), IndexError,
     "Expected source and index to have the same number of elements"),
    ("put_range", lambda m, d: _z(m, d, 3).put(_t(m, d, [5]), _z(m, d, 1)), IndexError,
     "out of range: tried to access index 5 on a tensor of 3 elements"),
    ("put_dtype", lambda m, d: _z(m, d, 3).put(_t(m, d, [0]), _z(m, d, 1, dtype=m.float64)), RuntimeError,
     "self and source expected to have the same dtype"),
    ("unravel_float", lambda m, d: m.unravel_index(_t(m, d, [1.0]), (2, 3)), TypeError,
     "expected 'indices' to be integer dtype"),
    ("cdist_1d", lambda m, d: m.cdist(_z(m, d, 3), _z(m, d, 2, 3)), RuntimeError,
     "cdist only supports at least 2D tensors, X1 got: 1D"),
    ("cdist_columns", lambda m, d: m.cdist(_z(m, d, 2, 3), _z(m, d, 2, 4)), RuntimeError,
     "X1 and X2 must have the same number of columns. X1: 3 X2: 4"),
    ("cdist_negative_p", lambda m, d: m.cdist(_z(m, d, 2, 3), _z(m, d, 2, 3), -1), RuntimeError,
     "non-negative p values"),
    ("cdist_int", lambda m, d: m.cdist(_z(m, d, 2, 3, dtype=m.int64), _z(m, d, 2, 3, dtype=m.int64)), RuntimeError,
     "cdist only supports floating-point dtypes, X1 got: Long"),
    ("cdist_mode", lambda m, d: m.cdist(_z(m, d, 2, 3), _z(m, d, 2, 3), compute_mode="fast"), ValueError,
     "fast is not a valid value for compute_mode"),
    ("pdist_3d", lambda m, d: m.pdist(_z(m, d, 2, 3, 1)), RuntimeError, "pdist only supports 2D tensors, got: 3D"),
    ("cov_3d", lambda m, d: m.cov(_z(m, d, 2, 3, 1)), RuntimeError, "expected input to have two or fewer dimensions"),
    ("cov_fweights_float", lambda m, d: m.cov(_z(m, d, 2, 3), fweights=_z(m, d, 3)), RuntimeError,
     "expected fweights to have integral dtype"),
    ("cov_aweights_numel", lambda m, d: m.cov(_z(m, d, 2, 3), aweights=_z(m, d, 2)), RuntimeError,
     r"expected aweights to have the same numel as there are observations in the input but got 2 != 3"),
    ("cov_fweights_negative", lambda m, d: m.cov(_z(m, d, 2, 3), fweights=_t(m, d, [1, -1, 1])), RuntimeError,
     "fweights cannot be negative"),
    ("trapezoid_x_size", lambda m, d: m.trapezoid(_z(m, d, 2, 3), _z(m, d, 2)), RuntimeError,
     "There must be one `x` value for each sample point"),
    ("renorm_p", lambda m, d: m.renorm(_z(m, d, 2, 3), 0, 0, 1.0), RuntimeError, "non-positive-norm not supported"),
    ("renorm_maxnorm", lambda m, d: m.renorm(_z(m, d, 2, 3), 2, 0, -1.0), RuntimeError,
     "expected maxnorm to be >= 0"),
    ("inner_sizes", lambda m, d: m.inner(_z(m, d, 2, 3), _z(m, d, 2, 2)), RuntimeError,
     "the last dimension must match on both input tensors"),
    ("histogram_int", lambda m, d: m.histogram(_z(m, d, 3, dtype=m.int64), 2), RuntimeError, "histogram"),
    ("histogram_weight", lambda m, d: m.histogram(_z(m, d, 3), 2, weight=_z(m, d, 2)), RuntimeError,
     "weight tensor"),
    ("logcumsumexp_dim", lambda m, d: m.logcumsumexp(_z(m, d, 2, 3), 2), IndexError, "Dimension out of range"),
    ("fill_diagonal_1d", lambda m, d: _z(m, d, 3).fill_diagonal_(1.0), RuntimeError, "dimensions must larger than 1"),
    ("fill_diagonal_unequal", lambda m, d: _z(m, d, 2, 3, 2).fill_diagonal_(1.0), RuntimeError,
     "all dimensions of input must be of equal length"),
    ("is_nonzero_many", lambda m, d: m.is_nonzero(_z(m, d, 2)), RuntimeError,
     "Boolean value of Tensor with more than one value is ambiguous"),
    ("is_nonzero_empty", lambda m, d: m.is_nonzero(_z(m, d, 0)), RuntimeError,
     "Boolean value of Tensor with no values is ambiguous"),
    ("unsqueeze_leaf", lambda m, d: _z(m, d, 2, requires_grad=True).unsqueeze_(0), RuntimeError,
     "a leaf Variable that requires grad is being used in an in-place operation"),
    ("resize_grad", lambda m, d: _z(m, d, 2, requires_grad=True).resize_(3), RuntimeError,
     "cannot resize variables that require grad"),
    ("tril_indices_float", lambda m, d: m.tril_indices(3, 3, dtype=m.float32), RuntimeError, "not implemented"),
    ("empty_permuted_rank", lambda m, d: m.empty_permuted((2, 3), (0,)), RuntimeError,
     "Number of dimensions in size does not match the length of the physical_layout"),
    ("frombuffer_empty", lambda m, d: m.frombuffer(bytearray(), dtype=m.float32), ValueError,
     "both buffer length"),
    ("segment_reduce_lengths", lambda m, d: m.segment_reduce(_z(m, d, 4), "sum", lengths=_t(m, d, [1, 2])),
     RuntimeError, "segment_reduce"),
    ("segment_reduce_negative", lambda m, d: m.segment_reduce(_z(m, d, 1), "sum", lengths=_t(m, d, [2, -1])),
     RuntimeError, "lengths contains negative value"),
    ("histogramdd_bins", lambda m, d: m.histogramdd(_z(m, d, 4, 2), [2, 2, 2]), RuntimeError, "histogramdd"),
    ("nonzero_static_size", lambda m, d: m.nonzero_static(_z(m, d, 3), size=-1), RuntimeError, "size"),
    ("gradient_edge_order", lambda m, d: m.gradient(_z(m, d, 4), edge_order=3), RuntimeError, "edge_order"),
    ("gradient_short", lambda m, d: m.gradient(_z(m, d, 2), edge_order=2), RuntimeError,
     "expected each dimension size to be at least edge_order\\+1"),
    ("gradient_spacing_len", lambda m, d: m.gradient(_z(m, d, 3, 3), spacing=[1.0]), RuntimeError,
     "spacing"),
]


test_bad_input = bad_input_test(BAD)


def test_as_strided_scatter_gradients(device):
    x = ember.tensor(np.random.RandomState(0).rand(3, 2), device=device, requires_grad=True)
    s = ember.tensor(np.random.RandomState(1).rand(2, 2), device=device, requires_grad=True)

    def fn(a, b):
        return ember.as_strided_scatter(a, b, (2, 2), (1, 2), 1)

    assert ember.autograd.gradcheck(fn, (x, s)) and ember.autograd.gradgradcheck(fn, (x, s))
    gx, gs = ember.autograd.grad(fn(x, s), (x, s), ember.arange(1.0, 7.0, device=device, dtype=x.dtype).view(3, 2))
    assert gx.tolist() == [[1.0, 0.0], [0.0, 0.0], [0.0, 6.0]] and gs.tolist() == [[2.0, 4.0], [3.0, 5.0]]


def test_failed_ops_leave_inputs_and_grads_untouched(device):
    x = ember.ones(3, device=device, requires_grad=True)
    (x * 2).sum().backward()
    y = (x * 1).detach()
    with pytest.raises(IndexError):
        y.put_(ember.tensor([0, 1], device=device), ember.zeros(3, device=device))
    with pytest.raises(RuntimeError):
        y.index_reduce_(0, ember.tensor([0], device=device), ember.zeros(2, device=device), "prod")
    with pytest.raises(RuntimeError):
        ember.select_scatter(x, ember.zeros(2, device=device), 0, 0)
    assert y.tolist() == [1.0, 1.0, 1.0] and x.grad.tolist() == [2.0, 2.0, 2.0]


# --------------------------------------------------------------------------- behaviour beyond values
def test_numpy_scalars_promote_like_python_scalars(device):
    t = ember.ones(3, device=device)
    assert (t / np.sqrt(np.float64(4.0))).dtype is ember.float32
    assert (np.float64(2) * t).dtype is ember.float32
    assert (t + np.int64(1)).dtype is ember.float32
    assert (t.int() + np.int64(1)).dtype is ember.int32
    assert (t.long() * np.float64(1.5)).dtype is ember.float32
    assert (t.double() * np.float32(2)).dtype is ember.float64
    assert torch.result_type(torch.ones(1), np.float64(1)) == torch.float32


def test_range_index_read_write_and_grad(device):
    x = ember.arange(12.0, device=device).reshape(3, 4).requires_grad_()
    y = ember.tensor([0, 3, 1], device=device)
    picked = x[range(3), y]
    assert picked.tolist() == [0.0, 7.0, 9.0]
    picked.sum().backward()
    assert x.grad[range(3), y].tolist() == [1.0, 1.0, 1.0] and float(x.grad.sum()) == 3.0
    w = ember.zeros(3, 4, device=device)
    w[range(3), y] = 1.0
    assert w.sum().item() == 3.0 and w[1, 3].item() == 1.0
    assert x[range(0)].shape == (0, 4)


def test_in_place_view_ops_keep_storage_and_history(device):
    base = ember.arange(6.0, device=device).reshape(2, 3)
    v = base[0]
    assert v.unsqueeze_(0) is v and v.shape == (1, 3)
    v.mul_(10)  # still a view of base
    assert base[0].tolist() == [0.0, 10.0, 20.0]
    x = ember.ones(2, 3, device=device, requires_grad=True)
    y = x * 2
    y.transpose_(0, 1).unsqueeze_(0)
    assert y.shape == (1, 3, 2)
    y.sum().backward()
    assert x.grad.tolist() == [[2.0] * 3] * 2


def test_as_strided_inplace(device):
    x = ember.arange(6.0, device=device)
    assert ember.as_strided_(x, (2, 2), (1, 2)) is x and x.tolist() == [[0.0, 2.0], [1.0, 3.0]]


def test_metadata_functions(device):
    t = ember.zeros(2, 3, device=device)
    assert ember.is_same_size(t, ember.ones(2, 3)) and not t.is_same_size(ember.ones(3, 2))
    assert ember.is_nonzero(ember.tensor([2.0])) and not ember.tensor(0).is_nonzero()
    assert ember.is_signed(t) and not ember.is_signed(t.to(ember.uint8))
    assert ember.is_inference(t) is False
    with ember.inference_mode():
        assert ember.is_inference(ember.ones(1, device=device))
    assert ember.get_device(t) == t.get_device()
    d = t * 1
    assert ember.detach_(d) is d and d.grad_fn is None


def test_legacy_new_and_strided_factories(device):
    x = ember.ones(2, dtype=ember.float64, device=device)
    a = x.new(2, 3)
    assert a.shape == (2, 3) and a.dtype is ember.float64 and a.device == x.device
    b = x.new([1, 2])
    assert b.tolist() == [1.0, 2.0] and b.dtype is ember.float64
    assert x.new().shape == (0,) and x.new(ember.Size([4])).shape == (4,)
    e = ember.empty_strided((2, 3), (1, 2), device=device)
    assert e.shape == (2, 3)
    assert ember.empty_permuted((2, 3, 4), (0, 2, 1), device=device).shape == (2, 3, 4)
    assert x.new_empty_strided((2, 2), (2, 1)).dtype is ember.float64
    if device == "cpu":
        assert e.stride() == torch.empty_strided((2, 3), (1, 2)).stride()
        p = ember.empty_permuted((2, 3, 4), (0, 2, 1))
        assert p.stride() == torch.empty_permuted((2, 3, 4), (0, 2, 1)).stride()


def test_frombuffer_shares_memory():
    buf = bytearray(np.arange(4, dtype=np.float32).tobytes())
    t = ember.frombuffer(buf, dtype=ember.float32, count=2, offset=4)
    assert t.tolist() == [1.0, 2.0]
    t[0] = 9.0
    assert np.frombuffer(buf, np.float32)[1] == 9.0
    with pytest.warns(UserWarning, match="not writable"):
        r = ember.frombuffer(b"\x01\x02", dtype=ember.uint8)
    assert r.tolist() == [1, 2]


def test_resize_family(device):
    t = ember.arange(4, device=device)
    assert t.resize_(2, 3).tolist() == [[0, 1, 2], [3, 0, 0]]
    assert t.resize_(2).tolist() == [0, 1]
    u = ember.zeros(5, device=device)
    assert ember.resize_as_(u, ember.zeros(2, 2)).shape == (2, 2)
    with pytest.warns(UserWarning, match="non-inplace resize is deprecated"):
        assert ember.arange(6, device=device).resize(3, 2).shape == (3, 2)
    with pytest.warns(UserWarning), pytest.raises(RuntimeError, match="autograd's resize can only change the shape"):
        ember.arange(6, device=device).resize(4)
    a, b = ember.zeros(2, device=device), ember.ones(3, device=device)
    assert a.set_(b) is a and a.tolist() == [1.0, 1.0, 1.0]
    b[0] = 5.0
    assert a[0].item() == 5.0  # shares b's storage
    assert a.set_().shape == (0,)


def test_from_file_reads_and_shares(tmp_path):
    path = str(tmp_path / "w.bin")
    np.arange(4, dtype=np.float32).tofile(path)
    assert ember.from_file(path, size=3, dtype=ember.float32).tolist() == [0.0, 1.0, 2.0]
    shared = ember.from_file(path, True, 4, dtype=ember.float32)
    shared[0] = 7.0
    del shared
    assert_close(ember.from_file(path, size=4, dtype=ember.float32), torch.from_file(path, size=4, dtype=torch.float32))
    with pytest.raises(RuntimeError, match="unable to read"):
        ember.from_file(path, size=10, dtype=ember.float32)


def test_tensor_metadata_methods(device):
    x = ember.zeros(2, 3, device=device)
    assert x.is_set_to(x) and not x.is_set_to(x[0]) and not x.is_set_to(ember.zeros(2, 3, device=device))
    assert x.const_data_ptr() == x.data_ptr()
    assert x.dim_order() == (0, 1) == tuple(torch.zeros(2, 3).dim_order())
    assert not (x.is_mps or x.is_xpu or x.is_xla or x.is_nested or x.is_distributed() or ember.is_distributed(x))
    assert x.module_load(x) is x

    class Marked(ember.Tensor):
        pass

    y = ember.ones(2, device=device, requires_grad=True)
    m = (y * 2).as_subclass(Marked)
    assert type(m) is Marked and m.tolist() == [2.0, 2.0]
    m.sum().backward()
    assert y.grad.tolist() == [2.0, 2.0]
    with pytest.raises(TypeError, match="subclass of Tensor"):
        x.as_subclass(int)


def test_apply_map_map2():
    x = ember.arange(4.0)
    assert x.apply_(lambda v: v * 2) is x and x.tolist() == [0.0, 2.0, 4.0, 6.0]
    assert x.map_(ember.ones(1), lambda a, b: a + b).tolist() == [1.0, 3.0, 5.0, 7.0]
    assert x.map2_(ember.ones(4), ember.full((4,), 2.0), lambda a, b, c: a * c - b).tolist() == [1.0, 5.0, 9.0, 13.0]
    t = torch.arange(4.0)
    assert t.apply_(lambda v: v * 2).tolist() == [0.0, 2.0, 4.0, 6.0]
    with pytest.raises(RuntimeError, match="Can't call apply_\\(\\) on Variable that requires grad"):
        ember.ones(2, requires_grad=True).apply_(lambda v: v)
    with pytest.raises(RuntimeError, match="expanded size"):
        ember.ones(3).map_(ember.ones(2), lambda a, b: a)


def test_set_default_tensor_type():
    try:
        with pytest.warns(UserWarning, match="deprecated"):
            ember.set_default_tensor_type(ember.DoubleTensor)
        assert ember.tensor([1.5]).dtype is ember.float64 and ember.get_default_dtype() is ember.float64
        with pytest.warns(UserWarning):
            ember.set_default_tensor_type("torch.FloatTensor")
        assert ember.tensor([1.5]).dtype is ember.float32
        with pytest.warns(UserWarning), pytest.raises(TypeError, match="floating-point"):
            ember.set_default_tensor_type(ember.LongTensor)
    finally:
        ember.set_default_dtype(ember.float32)


def test_cdist_gradient_at_zero_distance(device):
    x = ember.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=ember.float64, device=device, requires_grad=True)
    for mode in ("use_mm_for_euclid_dist", "donot_use_mm_for_euclid_dist"):
        (g,) = ember.autograd.grad(ember.cdist(x, x, compute_mode=mode).sum(), x)
        tx = torch.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=torch.float64, requires_grad=True)
        (tg,) = torch.autograd.grad(torch.cdist(tx, tx, compute_mode=mode).sum(), tx)
        assert_close(g, tg)


def test_logcumsumexp_wide_range_is_exact(device):
    x = ember.tensor([-1000.0, 0.0, 1000.0], dtype=ember.float64, device=device)
    assert ember.logcumsumexp(x, 0).tolist() == [-1000.0, 0.0, 1000.0]


def test_names_are_torch_names():
    names = ["repeat_interleave", "tensor_split", "hsplit", "vsplit", "dsplit", "rot90", "ravel", "isin",
             "tril_indices", "triu_indices", "unravel_index", "block_diag", "cartesian_prod", "combinations",
             "cdist", "pdist",
             "dist", "cov", "corrcoef", "trapezoid", "trapz", "cumulative_trapezoid", "diagflat", "logcumsumexp",
             "histogram", "inner", "chain_matmul", "index_reduce", "put", "index_put_", "select_scatter",
             "slice_scatter", "diagonal_scatter", "as_strided_scatter", "alias_copy", "diagonal_copy", "expand_copy",
             "permute_copy", "select_copy", "slice_copy", "split_copy", "squeeze_copy", "t_copy", "transpose_copy",
             "unbind_copy", "unfold_copy", "unsqueeze_copy", "view_copy", "narrow_copy", "detach_copy",
             "as_strided_copy", "split_with_sizes", "split_with_sizes_copy", "unsafe_chunk", "unsafe_split",
             "unsafe_split_with_sizes", "as_strided_", "detach_", "fill", "fill_", "zero_", "resize_as_",
             "empty_strided", "empty_permuted", "scalar_tensor", "frombuffer", "is_nonzero", "is_same_size",
             "is_signed", "is_inference", "get_device", "adjoint", "renorm"]
    methods = ["unsqueeze_", "squeeze_", "transpose_", "t_", "swapaxes_", "swapdims_", "as_strided_", "tril_",
               "triu_", "fill_diagonal_", "resize_", "resize_as_", "resize", "resize_as", "set_", "new",
               "new_empty_strided", "mH", "renorm_", "as_subclass", "is_set_to", "dim_order", "cumprod_",
               "index_reduce_", "put_", "put", "repeat_interleave",
               "logcumsumexp", "histogram", "diagflat", "cov", "corrcoef", "dist", "inner", "narrow_copy"]
    assert [n for n in names if not hasattr(torch, n)] == [] and [n for n in names if not hasattr(ember, n)] == []
    assert [n for n in methods if not hasattr(torch.Tensor, n)] == []
    assert [n for n in methods if not hasattr(ember.Tensor, n)] == []


# --------------------------------------------------------------------------- weights_only and safe globals
class Config:
    def __init__(self, lr):
        self.lr = lr


def _saved(obj):
    buf = io.BytesIO()
    ember.save(obj, buf)
    buf.seek(0)
    return buf


def test_safe_globals_allow_marked_classes_only():
    ser = ember.serialization
    assert ser.get_safe_globals() == []
    buf = _saved({"cfg": Config(0.1), "w": ember.ones(2)})
    with pytest.raises(pickle.UnpicklingError, match=r"Unsupported global: GLOBAL .*Config.*add_safe_globals"):
        ember.load(buf)
    with ser.safe_globals([Config]):
        assert ser.get_safe_globals() == [Config]
        buf.seek(0)
        got = ember.load(buf)
    assert isinstance(got["cfg"], Config) and got["cfg"].lr == 0.1 and got["w"].tolist() == [1.0, 1.0]
    assert ser.get_safe_globals() == []
    ser.add_safe_globals([(Config, f"{Config.__module__}.Config")])
    try:
        buf.seek(0)
        assert ember.load(buf)["cfg"].lr == 0.1
    finally:
        ser.clear_safe_globals()
    assert ser.get_safe_globals() == []


def test_safe_globals_apply_to_pytorch_checkpoints(tmp_path):
    path = tmp_path / "t.pt"
    torch.save({"cfg": Config(0.5), "w": torch.ones(2)}, path)
    with pytest.raises(pickle.UnpicklingError, match="Config"):
        ember.load(path)
    with ember.serialization.safe_globals([Config]):
        got = ember.load(path)
    assert got["cfg"].lr == 0.5 and got["w"].tolist() == [1.0, 1.0]


def test_safe_globals_bad_tuple():
    with ember.serialization.safe_globals([(Config,)]):
        with pytest.raises(ValueError, match="Expected tuple of length 2"):
            ember.load(_saved({"cfg": Config(1)}))

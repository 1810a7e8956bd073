"""The compressed sparse layouts (CSR, CSC, BSR, BSC) against PyTorch: construction and its invariant checks,
conversion from dense and sparse tensors, index names and dtypes, block values, products with a dense operand
and their gradients to the values and the dense operand, ``zeros``/``empty`` of a layout, and printing."""
import re

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")
# PyTorch warns that its sparse invariant checks are off and that CSC/BSR/BSC support is in beta
pytestmark = pytest.mark.filterwarnings("ignore:Sparse:UserWarning")

# a 4x6 matrix with whole zero 2x2 and 2x3 blocks, one explicit zero inside a nonzero block, and an empty row
DENSE = [[0., 2., 0., 0., 0., 0.],
         [3., 0., 0., 0., 0., 0.],
         [0., 0., 0., 0., 5., 6.],
         [0., 0., 0., 0., 0., 7.]]
# layout name -> (compressed, plain index names, blocksize)
LAYOUTS = {"csr": ("crow_indices", "col_indices", None), "csc": ("ccol_indices", "row_indices", None),
           "bsr": ("crow_indices", "col_indices", (2, 2)), "bsc": ("ccol_indices", "row_indices", (2, 3))}


def convert(m, t, name):
    block = LAYOUTS[name][2]
    return getattr(t, f"to_sparse_{name}")(*(block,) if block else ())


def same(e, t):
    np.testing.assert_allclose(e.detach().cpu().numpy(), t.detach().numpy(), rtol=1e-6, atol=1e-6)


def printed(e, t, device):
    """ember's and PyTorch's prints of ``e`` and ``t``, ember's device named nowhere; on a device of another type
    (which ember names in the values, lengthening their lines) with whitespace runs made one space."""
    ours, theirs = re.sub(r", device='[^']*'", "", repr(e)), repr(t).replace("torch", "ember")
    if ember.device(device).type != "cpu":
        ours, theirs = " ".join(ours.split()), " ".join(theirs.split())
    return ours, theirs


def structure(s, name):
    compressed, plain, _ = LAYOUTS[name]
    return [getattr(s, compressed)().tolist(), getattr(s, plain)().tolist(), s.values().tolist()]


@pytest.mark.parametrize("name", LAYOUTS)
def test_from_dense_matches_pytorch(device, name):
    e = convert(ember, ember.tensor(DENSE, device=device), name)
    t = convert(torch, torch.tensor(DENSE), name)
    layout = getattr(ember, f"sparse_{name}")
    assert e.layout is layout and str(e.layout) == str(t.layout).replace("torch", "ember")
    assert (e.is_sparse, e.is_sparse_csr) == (t.is_sparse, t.is_sparse_csr)
    assert structure(e, name) == structure(t, name)
    assert getattr(e, LAYOUTS[name][0])().dtype == ember.int64
    assert (e._nnz(), e.sparse_dim(), e.dense_dim(), tuple(e.shape)) == (t._nnz(), t.sparse_dim(), t.dense_dim(),
                                                                          tuple(t.shape))
    same(e.to_dense(), t.to_dense())
    same(e.to_sparse().to_dense(), t.to_sparse().to_dense())
    assert e.to_sparse()._indices().tolist() == t.to_sparse()._indices().tolist()
    assert e.to_sparse().is_coalesced() == t.to_sparse().is_coalesced()


@pytest.mark.parametrize("layout, block", [("sparse_csc", None), ("sparse_bsr", (2, 2)), ("sparse_bsc", (2, 3))])
def test_to_sparse_with_layout_and_between_layouts(device, layout, block):
    e = ember.tensor(DENSE, device=device).to_sparse(layout=getattr(ember, layout), blocksize=block)
    t = torch.tensor(DENSE).to_sparse(layout=getattr(torch, layout), blocksize=block)
    assert structure(e, layout[7:]) == structure(t, layout[7:])
    coo_e, coo_t = ember.tensor(DENSE, device=device).to_sparse(), torch.tensor(DENSE).to_sparse()
    for name in ("csr", "csc"):  # from COO and from each other: the explicit entries kept, in order
        assert structure(convert(ember, coo_e, name), name) == structure(convert(torch, coo_t, name), name)
    csc_e = ember.tensor(DENSE, device=device).to_sparse_csc()
    assert structure(csc_e.to_sparse_csr(), "csr") == structure(torch.tensor(DENSE).to_sparse_csc().to_sparse_csr(),
                                                               "csr")
    assert structure(csc_e.to_sparse_bsr((1, 1)), "bsr") == structure(
        torch.tensor(DENSE).to_sparse_csc().to_sparse_bsr((1, 1)), "bsr")


@pytest.mark.parametrize("name", ["csc", "bsr", "bsc"])
def test_constructors_and_inferred_size(device, name):
    e0 = convert(ember, ember.tensor(DENSE, device=device), name)
    t0 = convert(torch, torch.tensor(DENSE), name)
    ctor_e, ctor_t = getattr(ember, f"sparse_{name}_tensor"), getattr(torch, f"sparse_{name}_tensor")
    parts_e = [getattr(e0, n)() for n in LAYOUTS[name][:2]] + [e0.values()]
    parts_t = [getattr(t0, n)() for n in LAYOUTS[name][:2]] + [t0.values()]
    e, t = ctor_e(*parts_e, (4, 6), dtype=ember.float64), ctor_t(*parts_t, (4, 6), dtype=torch.float64)
    assert e.dtype == ember.float64 and e.device.type == ember.device(device).type
    same(e.to_dense(), t.to_dense())
    assert tuple(ctor_e(*parts_e).shape) == tuple(ctor_t(*parts_t).shape)  # the size the indices need
    layout_e = getattr(ember, f"sparse_{name}")
    g = ember.sparse_compressed_tensor(*parts_e, (4, 6), layout=layout_e)
    assert g.layout is layout_e and structure(g, name) == structure(t0, name)
    lists = [p.tolist() for p in parts_t]
    assert structure(ctor_e(*lists, (4, 6)), name) == structure(ctor_t(*lists, (4, 6)), name)
    i32 = [torch_to_ember(p.int(), device) for p in parts_t[:2]]  # int32 indices stay int32, as in PyTorch
    assert getattr(ctor_e(*i32, parts_e[2], (4, 6)), LAYOUTS[name][1])().dtype == ember.int32


def torch_to_ember(t, device):
    return ember.tensor(t.numpy(), device=device)


@pytest.mark.parametrize("name", LAYOUTS)
def test_matmul_gradients_to_values_and_dense_operand(device, name):
    rng = np.random.default_rng(0)
    x, w = rng.standard_normal((6, 3)), rng.standard_normal((4, 3))
    se = convert(ember, ember.tensor(DENSE, dtype=ember.float64, device=device), name)
    st = convert(torch, torch.tensor(DENSE, dtype=torch.float64), name)
    ve, vt = se.values().clone().requires_grad_(), st.values().clone().requires_grad_()
    se = ember.sparse_compressed_tensor(*(getattr(se, n)() for n in LAYOUTS[name][:2]), ve, (4, 6), layout=se.layout)
    st = torch.sparse_compressed_tensor(*(getattr(st, n)() for n in LAYOUTS[name][:2]), vt, (4, 6), layout=st.layout)
    assert se.requires_grad and se.is_leaf == st.is_leaf  # (built from values that record a gradient: no leaf)
    xe = ember.tensor(x, device=device, requires_grad=True)
    xt = torch.tensor(x, requires_grad=True)
    ye = se @ xe
    (ye * ember.tensor(w, device=device)).sum().backward()
    dense_t = torch.tensor(DENSE, dtype=torch.float64)  # PyTorch lacks the gradient of x through blocks
    ((dense_t @ xt) * torch.tensor(w)).sum().backward()
    same(xe.grad, xt.grad)
    if name != "bsc":  # PyTorch has no BSC @ dense (gradcheck below covers ember's)
        yt = st @ torch.tensor(x)
        same(ye, yt)
        (yt * torch.tensor(w)).sum().backward()
        same(ve.grad, vt.grad)
    same(ye, dense_t @ torch.tensor(x))


@pytest.mark.parametrize("name", ["csc", "bsc"])
def test_values_gradcheck_through_to_dense_and_mm(device, name):
    base = convert(ember, ember.tensor(DENSE, dtype=ember.float64, device=device), name)
    ptr, idx = (getattr(base, n)() for n in LAYOUTS[name][:2])
    layout = base.layout
    x = ember.tensor(np.random.default_rng(1).standard_normal((6, 2)), device=device, requires_grad=True)

    def f(v, x):
        s = ember.sparse_compressed_tensor(ptr, idx, v, (4, 6), layout=layout)
        return s.to_dense().sin().sum() + ember.sparse.mm(s, x)

    assert ember.autograd.gradcheck(f, (base.values().clone().requires_grad_(), x))


@pytest.mark.parametrize("name", LAYOUTS)
def test_transpose_swaps_the_compressed_layout(device, name):
    e = convert(ember, ember.arange(24.0, device=device).reshape(4, 6) * ember.tensor(DENSE, device=device), name)
    t = convert(torch, torch.arange(24.0).reshape(4, 6) * torch.tensor(DENSE), name)
    for et, tt in ((e.t(), t.t()), (e.transpose(1, 0), t.transpose(1, 0))):
        assert str(et.layout) == str(tt.layout).replace("torch", "ember") and tuple(et.shape) == (6, 4)
        assert structure(et, str(tt.layout)[13:]) == structure(tt, str(tt.layout)[13:])
        same(et.to_dense(), tt.to_dense())


def test_dense_gradient_through_conversion(device):
    a = np.random.default_rng(2).standard_normal((4, 6)) * np.array(DENSE)
    de = ember.tensor(a, device=device, requires_grad=True)
    dt = torch.tensor(a, requires_grad=True)
    (de.to_sparse_bsc((2, 3)).values() ** 2).sum().backward()
    (dt.to_sparse_bsc((2, 3)).values() ** 2).sum().backward()
    same(de.grad, dt.grad)


@pytest.mark.parametrize("fn", ["zeros", "empty"])
def test_zeros_and_empty_of_a_layout(device, fn):
    e = getattr(ember, fn)(3, 4, layout=ember.sparse_csc, device=device)
    t = getattr(torch, fn)(3, 4, layout=torch.sparse_csc)
    assert e.layout is ember.sparse_csc and e._nnz() == t._nnz() == 0
    assert [len(p) for p in structure(e, "csc")] == [len(p) for p in structure(t, "csc")]
    assert e.ccol_indices().tolist() == [0] * 5 and e.to_dense().tolist() == [[0.0] * 4] * 3
    with pytest.raises(RuntimeError, match=f"{fn}_sparse_compressed expected sparse compressed \\(non-block\\) "
                                           "tensor layout but got SparseBsr"):
        getattr(ember, fn)(4, 4, layout=ember.sparse_bsr, device=device)


def test_printing_like_pytorch(device):
    for name in LAYOUTS:
        e = convert(ember, ember.tensor(DENSE, device=device), name)
        t = convert(torch, torch.tensor(DENSE), name)
        first = re.sub(r", device='[^']*'", "", repr(e).split("\n")[0])  # another backend names its device
        assert first == repr(t).split("\n")[0].replace("torch", "ember")
        ours, theirs = printed(e, t, device)
        assert ours == theirs  # wrapped as PyTorch's
    e = ember.tensor(DENSE, dtype=ember.float64, device=device).to_sparse_csc()
    t = torch.tensor(DENSE, dtype=torch.float64).to_sparse_csc()
    assert "values=tensor([3., 2., 5., 6., 7.]" in repr(e) and "values=tensor([3., 2., 5., 6., 7.])" in repr(t)
    ours, theirs = printed(e, t, device)
    assert ours == theirs
    assert "dtype=torch.float64, layout=torch.sparse_csc" in repr(t)


BAD = [
    (lambda m: m.sparse_csc_tensor([0, 1, 2], [1, 0, 0], [1., 2.], (2, 2), check_invariants=True), RuntimeError,
     r"row_indices.shape\[-1\] must be equal to nnz \(=2\) as defined by values.shape\[0\], but got 3"),
    (lambda m: m.sparse_csc_tensor([0, 1, 2], [1, 2], [1., 2.], (2, 2), check_invariants=True), RuntimeError,
     "`0 <= row_indices < nrows` is not satisfied."),
    (lambda m: m.sparse_csc_tensor([0, 2, 1], [1, 0], [1., 2.], (2, 2), check_invariants=True), RuntimeError,
     r"`ccol_indices\[..., -1\] == nnz` is not satisfied."),
    (lambda m: m.sparse_csc_tensor([1, 1, 2], [1, 0], [1., 2.], (2, 2), check_invariants=True), RuntimeError,
     r"`ccol_indices\[..., 0\] == 0` is not satisfied."),
    (lambda m: m.sparse_csc_tensor([0, 1, 2, 2], [1, 0], [1., 2.], (2, 2), check_invariants=True), RuntimeError,
     r"ccol_indices.shape\[-1\] must be equal to the number of columns \+ 1 \(=3\), but got 4"),
    (lambda m: m.sparse_csc_tensor([0, 2, 2], [1, 1], [1., 2.], (2, 2), check_invariants=True), RuntimeError,
     "are sorted and distinct along the last dimension values` is not satisfied"),
    (lambda m: m.sparse_bsr_tensor([0, 1, 1], [0], m.ones(1, 2, 2), (4, 5), check_invariants=True), RuntimeError,
     r"tensor shape\[1\] \(=5\) must be divisible with blocksize\[1\] \(=2\) as defined by values shape"),
    (lambda m: m.sparse_bsr_tensor([0, 1, 1], [2], m.ones(1, 2, 2), (4, 4), check_invariants=True), RuntimeError,
     "`0 <= col_indices < ncols` is not satisfied."),
    (lambda m: m.sparse_bsr_tensor([0, 1, 1], [0], m.ones(1, 2), (4, 4), check_invariants=True), RuntimeError,
     r"values must have dimensionality > sum of batch and block dimensionalities \(=0 \+ 2\) but got 2"),
    (lambda m: m.sparse_csc_tensor(m.tensor([0, 1, 2], dtype=m.int32), m.tensor([1, 0]), [1., 2.], (2, 2),
                                   check_invariants=True),
     RuntimeError, "ccol_indices and row_indices must have the same dtype, bot got Int and Long, respectively"),
    (lambda m: m.sparse_compressed_tensor([0, 1, 1], [0], m.ones(1, 2, 2), (4, 4)), RuntimeError,
     "sparse_compressed_tensor expected sparse compressed tensor layout but got none"),
    (lambda m: m.sparse_compressed_tensor([0, 1, 1], [0], m.ones(1, 2, 2), (4, 4), layout=m.strided), RuntimeError,
     "sparse_compressed_tensor expected sparse compressed tensor layout but got Strided"),
    (lambda m: m.zeros(4, 4).to_sparse_bsr((3, 3)), RuntimeError,
     r"dense_to_sparse_bsr: tensor sparse size \(4,4\) must be divisible by given blocksize \(3,3\)"),
    (lambda m: m.zeros(4, 4).to_sparse_bsr((2,)), RuntimeError,
     "dense_to_sparse_bsr: blocksize needs to be a tuple of size 2, but got 1"),
    (lambda m: m.zeros(4, 4).to_sparse_bsr(None), TypeError,
     r"to_sparse_bsr\(\): argument 'blocksize' \(position 1\) must be tuple of ints, not NoneType"),
    (lambda m: m.zeros(4, 4).to_sparse(layout=m.sparse_bsc), RuntimeError,
     "dense_to_sparse: conversion from Strided to SparseBsc without blocksize argument given is not supported"),
    (lambda m: m.zeros(4, 4).to_sparse(layout=m.sparse_csr, blocksize=(2, 2)), RuntimeError,
     "dense_to_sparse: conversion from Strided to SparseCsr with blocksize argument given is not supported"),
    (lambda m: m.eye(4).to_sparse_bsr((2, 2)).to_sparse_csr(), RuntimeError,
     "sparse_compressed_to_sparse_csr: expected SparseCsr or SparseCsc layout but got SparseBsr"),
    (lambda m: m.eye(2).to_sparse_csc().crow_indices(), RuntimeError,
     "crow_indices expected sparse row compressed tensor layout but got SparseCsc"),
    (lambda m: m.eye(2).to_sparse_csr().row_indices(), RuntimeError,
     "row_indices expected sparse column compressed tensor layout but got SparseCsr"),
    (lambda m: m.eye(2).ccol_indices(), RuntimeError,
     "ccol_indices expected sparse column compressed tensor layout but got Strided"),
]


@pytest.mark.parametrize("call, exc, pattern", BAD)
def test_bad_input_raises_like_pytorch(call, exc, pattern):
    with pytest.raises(exc, match=pattern):
        call(torch)
    with pytest.raises(exc, match=pattern):
        call(ember)


# what a sparse leaf's .grad is after each op, as PyTorch gives it: dense (every position) from mm, matmul, addmm,
# spmm and Tensor.sum; the leaf's own pattern and layout from ember.sparse.mm/addmm, to_dense and values
GRAD_OPS = {
    "mm": lambda m, s, x: m.mm(s, x).sum(), "spmm": lambda m, s, x: m.spmm(s, x).sum(),
    "matmul": lambda m, s, x: (s @ x).pow(2).sum(), "dense@t": lambda m, s, x: (x.t() @ s.t()).sum(),
    "matvec": lambda m, s, x: (s @ x[:, 0]).sum(), "addmm": lambda m, s, x: m.addmm(x[:4], s, x).sum(),
    "sum": lambda m, s, x: s.sum(), "sparse.mm": lambda m, s, x: m.sparse.mm(s, x).pow(2).sum(),
    "sparse.addmm": lambda m, s, x: m.sparse.addmm(x[:4], s, x).sum(),
    "to_dense": lambda m, s, x: (s.to_dense() ** 2).sum(), "values": lambda m, s, x: (s.values() * 3).sum(),
    "both": lambda m, s, x: m.sparse.mm(s, x).sum() + m.mm(s, x).sum(),
}


def _grad_of(m, name, op, device, coo=False):
    """A leaf of layout ``name`` (made with requires_grad=True; with ``coo``, the COO tensor of its stored
    entries) and its .grad after ``op``, or the exception type if the op's backward raises."""
    dev = device if m is ember else "cpu"
    base = convert(m, m.tensor(DENSE, dtype=m.float64, device=dev), name)
    if coo:
        base = base.to_sparse().coalesce()  # each block's explicit zeros stay stored entries
        s = m.sparse_coo_tensor(base.indices(), base.values(), (4, 6), requires_grad=True, is_coalesced=True)
    else:
        parts = [getattr(base, n)() for n in LAYOUTS[name][:2]] + [base.values()]
        s = getattr(m, f"sparse_{name}_tensor")(*parts, (4, 6), requires_grad=True)
    assert s.is_leaf and s.requires_grad
    x = m.arange(18, dtype=m.float64, device=dev).reshape(6, 3) / 7
    try:
        GRAD_OPS[op](m, s, x).backward()
    except RuntimeError as e:
        return s, type(e)
    return s, s.grad


@pytest.mark.parametrize("name", LAYOUTS)
def test_leaf_gradient_layout_values_and_indices_match_pytorch(device, name):
    for op in GRAD_OPS:
        (se, ge), (_, gt) = _grad_of(ember, name, op, device), _grad_of(torch, name, op, device)
        if gt is RuntimeError:  # PyTorch has no such backward (of CSC/BSR/BSC in several): against a COO leaf
            _, gt = _grad_of(torch, name, op, device, coo=True)  # of the same stored entries
            if gt.layout is torch.sparse_coo:
                assert ge.layout is se.layout and structure(ge, name)[:2] == structure(se, name)[:2], op
                gt = gt.to_dense() if name in ("bsr", "bsc") else convert(torch, gt.to_dense(), name)
                same(ge.to_dense() if name in ("bsr", "bsc") else ge.values(),
                     gt if name in ("bsr", "bsc") else gt.values())
                continue
        assert str(ge.layout) == str(gt.layout).replace("torch", "ember"), op
        if gt.layout is torch.strided:
            same(ge, gt)
        else:
            assert structure(ge, name)[:2] == structure(gt, name)[:2], op
            same(ge.values(), gt.values())
    s = ember.sparse_csr_tensor([0, 1, 1], [1], [2.0], (2, 2), requires_grad=True)
    (s @ ember.ones(2, 2)).sum().backward()
    assert s.grad.layout is ember.strided
    s.grad = None
    assert s.grad is None


def test_conversions_and_transposes_pass_a_dense_gradient_on_whole(device):
    a = np.array(DENSE)
    xe = ember.tensor(a, device=device, requires_grad=True)
    xt = torch.tensor(a, requires_grad=True)
    w = np.arange(12.0).reshape(6, 2)
    for f in (lambda m, x: m.mm(x.to_sparse_csr(), x.new_tensor(w)),
              lambda m, x: x.to_sparse().t().t() @ x.new_tensor(w),
              lambda m, x: x.new_tensor(w).t() @ x.to_sparse_csr().t().to_sparse_csr(),
              lambda m, x: x.to_sparse_csc().to_dense() * 3):  # to_dense's gradient keeps the pattern
        xe.grad = xt.grad = None
        f(ember, xe).sum().backward()
        f(torch, xt).sum().backward()
        same(xe.grad, xt.grad)


# a [2, 3, 2] tensor: as batched CSR (2 batches of 3x2, two entries each) or as hybrid CSR (3x2 of 2-vectors)
BATCHED = [[[0., 0.], [1., 2.], [0., 0.]], [[3., 0.], [0., 0.], [0., 5.]]]
SHAPED = [  # (build from a library, dense_dim)
    (lambda m: m.tensor(BATCHED).to_sparse_csr(), 0), (lambda m: m.tensor(BATCHED).to_sparse_csr(dense_dim=1), 1),
    (lambda m: m.tensor(BATCHED).to_sparse_csc(dense_dim=1), 1),
    (lambda m: m.tensor(BATCHED).to_sparse(layout=m.sparse_csr, dense_dim=1), 1),
    (lambda m: m.cat([m.tensor(BATCHED)] * 2).to_sparse_bsr((2, 1), dense_dim=1), 1),
    (lambda m: m.tensor(BATCHED).to_sparse_bsr((1, 1)), 0),
    (lambda m: m.stack([m.tensor(BATCHED)] * 2).to_sparse_csr(dense_dim=1), 1),
    (lambda m: m.sparse_csr_tensor([0, 1, 3], [1, 0, 2], [[1., 2.], [3., 0.], [0., 5.]]), 1),
    (lambda m: m.sparse_csr_tensor([[0, 1, 2], [0, 2, 2]], [[1, 0], [0, 1]], [[1., 2.], [3., 4.]], (2, 2, 2)), 0),
    (lambda m: m.zeros(2, 3, 4, layout=m.sparse_csr), 0),
]


@pytest.mark.parametrize("k", range(len(SHAPED)))
def test_batched_and_hybrid_compressed_tensors_match_pytorch(device, k):
    build, dense_dim = SHAPED[k]
    with ember.device(device):
        e = build(ember)
    t = build(torch)
    name = str(t.layout)[13:]
    assert str(e.layout) == str(t.layout).replace("torch", "ember")
    assert (tuple(e.shape), e.dense_dim(), e.sparse_dim(), e._nnz()) == (tuple(t.shape), dense_dim, t.sparse_dim(),
                                                                         t._nnz())
    compressed, plain, _ = LAYOUTS[name]
    for part in (compressed, plain, "values"):
        pe, pt = getattr(e, part)(), getattr(t, part)()
        assert tuple(pe.shape) == tuple(pt.shape) and pe.tolist() == pt.tolist(), part
    same(e.to_dense(), t.to_dense())
    coo_e, coo_t = e.to_sparse(), t.to_sparse()
    assert coo_e._indices().tolist() == coo_t._indices().tolist()
    same(coo_e._values(), coo_t._values())
    ours, theirs = printed(e, t, device)
    assert ours == theirs


def test_batched_and_hybrid_bad_input_like_pytorch():
    for m in (ember, torch):
        with pytest.raises(RuntimeError, match=r"t\(\) expects a tensor with <= 2 dimensions, but self is 3D"):
            m.tensor(BATCHED).to_sparse_csr(dense_dim=1).t()
        with pytest.raises(RuntimeError):  # a different number of entries per batch
            m.tensor([[[1., 0.]], [[1., 1.]]]).to_sparse_csr()
        with pytest.raises(RuntimeError):  # PyTorch has no product of a batched or hybrid compressed tensor
            m.tensor(BATCHED).to_sparse_csr() @ m.ones(2, 4)

"""PyTorch's autocast op lists, mapped to ember's Ops: the one table autocast reads.

PyTorch registers a cast policy per ATen op and device type (``aten/src/ATen/autocast_mode.cpp`` and
``autocast_mode.h``).  ember autocasts where its ops pass dispatch, one Op at a time, so each row names
PyTorch's op, the ember Op that computes it (``None`` where ember composes it of other ops: those
constituent Ops then follow their own rows), and the policy on the CPU and on CUDA:

* ``LOWER``: every eligible floating tensor is cast to the autocast dtype (``lower_precision_fp``);
* ``FP32``: every eligible floating tensor is cast to float32 (PyTorch's ``fp32`` and, for ops whose only
  floating input decides the result, ``fp32_set_opt_dtype``);
* ``PROMOTE``: eligible tensors are cast to the widest floating type among them (float32 wins);
* ``None``: not on that device's list; the op runs in its inputs' types.

Eligible: a floating tensor on the autocast device type that is not float64 (PyTorch's ``is_eligible``).
An op whose declaration carries its policy (``autocast={"cuda": FP32}`` on the row, as the pointwise functions
with a wide range do) takes it from there: the declaration comes first, and ``ROWS`` holds the rest.
Where one ember Op serves several PyTorch ops of different policies, the Op takes the policy of the first
row that names it, and the later rows say where PyTorch differs (``docs/amp.md`` lists those cases).
"""
from __future__ import annotations

from ..autograd.function import OPS

LOWER, FP32, PROMOTE = "lower_precision_fp", "fp32", "promote"

# PyTorch op                      ember Op              CPU       CUDA
ROWS = (
    # ---- lower precision (matrix products and convolutions)
    ("matmul",                    "Matmul",             LOWER,    LOWER),
    ("mm",                        "Matmul",             LOWER,    LOWER),
    ("bmm",                       "Matmul",             LOWER,    LOWER),
    ("mv",                        "Matmul",             None,     LOWER),    # ember: Matmul, so LOWER on CPU too
    ("dot",                       "Matmul",             None,     PROMOTE),  # ember: Matmul's policy
    ("vdot",                      "Matmul",             None,     PROMOTE),  # ember: Matmul's policy
    ("linear",                    "Linear",             LOWER,    LOWER),
    ("linear",                    "LinearStack",        LOWER,    LOWER),    # vmap's, per-sample weights
    ("conv1d",                    "Conv",               LOWER,    LOWER),
    ("conv2d",                    "Conv",               LOWER,    LOWER),
    ("conv3d",                    "Conv",               LOWER,    LOWER),
    ("conv_transpose1d",          "ConvInputGrad",      LOWER,    LOWER),
    ("conv_transpose2d",          "ConvInputGrad",      LOWER,    LOWER),
    ("conv_transpose3d",          "ConvInputGrad",      LOWER,    LOWER),
    ("einsum",                    "Einsum",             LOWER,    LOWER),    # CPU: through bmm, which is listed
    ("addmm",                     None,                 LOWER,    LOWER),    # ember: mm (LOWER) + add
    ("addmv",                     None,                 None,     LOWER),
    ("addr",                      None,                 None,     LOWER),
    ("addbmm",                    None,                 LOWER,    LOWER),
    ("baddbmm",                   None,                 LOWER,    LOWER),
    ("linalg_vecdot",             None,                 LOWER,    LOWER),
    ("prelu",                     "PreluKernel",        LOWER,    LOWER),
    ("chain_matmul",              None,                 None,     LOWER),    # ember: a chain of Matmul
    ("linalg_multi_dot",          None,                 None,     LOWER),    # ember: a chain of Matmul
    ("scaled_dot_product_attention", None,              LOWER,    LOWER),    # ember: Matmul, softmax, Matmul
    ("lstm_cell",                 None,                 None,     LOWER),
    ("gru_cell",                  None,                 None,     LOWER),
    ("rnn_tanh_cell",             None,                 None,     LOWER),
    ("rnn_relu_cell",             None,                 None,     LOWER),
    ("mkldnn_rnn_layer",          "LSTMLayer",          LOWER,    None),     # nn.LSTM's layer on the CPU
    # ---- float32: pointwise functions with a wide range (CUDA): acos, asin, cosh, erfinv, exp, expm1, log,
    # log10, log2, log1p, reciprocal, rsqrt, sinh, tan, pow, softplus declare it on their rows
    # ---- float32: reductions and normalisations
    ("sum",                       "Sum",                None,     FP32),     # fp32_set_opt_dtype
    ("prod",                      "Prod",               FP32,     FP32),
    ("cumsum",                    "Cumsum",             None,     FP32),     # fp32_set_opt_dtype
    ("cumprod",                   "Cumprod",            None,     FP32),     # fp32_set_opt_dtype
    ("softmax",                   "Softmax",            None,     FP32),     # fp32_set_opt_dtype
    ("log_softmax",               "LogSoftmax",         None,     FP32),     # fp32_set_opt_dtype
    ("logsumexp",                 "LogSumExp",          None,     FP32),
    ("linalg_vector_norm",        "NormSqrt",           None,     FP32),     # fp32_set_opt_dtype
    ("layer_norm",                None,                 None,     FP32),
    ("group_norm",                None,                 None,     FP32),
    ("cosine_similarity",         None,                 None,     FP32),
    ("cdist",                     None,                 FP32,     FP32),
    ("dist",                      None,                 None,     FP32),
    ("pdist",                     None,                 None,     FP32),
    ("renorm",                    None,                 None,     FP32),
    ("trace",                     None,                 FP32,     None),
    # ---- float32: losses
    ("cross_entropy_loss",        "CrossEntropyIndex",  FP32,     FP32),     # CUDA: log_softmax + nll_loss, both FP32
    ("nll_loss",                  None,                 FP32,     FP32),
    ("ctc_loss",                  "CtcLoss",            FP32,     None),
    ("mse_loss",                  None,                 FP32,     FP32),
    ("l1_loss",                   None,                 FP32,     FP32),
    ("smooth_l1_loss",            None,                 FP32,     FP32),
    ("huber_loss",                None,                 FP32,     FP32),
    ("kl_div",                    None,                 FP32,     FP32),
    ("binary_cross_entropy_with_logits", None,          FP32,     FP32),
    ("binary_cross_entropy",      None,                 FP32,     None),     # CUDA: refused by PyTorch
    ("poisson_nll_loss",          None,                 FP32,     FP32),
    ("cosine_embedding_loss",     None,                 FP32,     FP32),
    ("hinge_embedding_loss",      None,                 FP32,     FP32),
    ("margin_ranking_loss",       None,                 FP32,     FP32),
    ("multilabel_margin_loss",    None,                 FP32,     FP32),
    ("soft_margin_loss",          None,                 FP32,     FP32),
    ("triplet_margin_loss",       None,                 FP32,     FP32),
    ("multi_margin_loss",         None,                 FP32,     FP32),
    # ---- float32: linear algebra (CPU)
    ("linalg_cholesky",           "Cholesky",           FP32,     None),
    ("linalg_inv",                "Inv",                FP32,     None),
    ("pinverse",                  "Pinv",               FP32,     None),
    ("linalg_solve",              "Solve",              FP32,     None),
    ("triangular_solve",          "SolveTriangular",    FP32,     None),
    ("linalg_qr",                 "QR",                 FP32,     None),
    ("linalg_svd",                "SVD",                FP32,     None),
    ("linalg_eig",                "Eig",                FP32,     None),
    ("linalg_eigh",               "Eigh",               FP32,     None),
    ("geqrf",                     "Geqrf",              FP32,     None),
    ("_lu_with_info",             "LuFactor",           FP32,     None),
    ("linalg_lstsq",              None,                 FP32,     None),
    ("linalg_svdvals",            None,                 FP32,     None),
    ("linalg_eigvals",            None,                 FP32,     None),
    ("linalg_eigvalsh",           None,                 FP32,     None),
    ("linalg_matrix_rank",        None,                 FP32,     None),
    ("linalg_cond",               None,                 FP32,     None),
    ("cholesky_solve",            None,                 FP32,     None),
    ("cholesky_inverse",          None,                 FP32,     None),
    ("polar",                     None,                 FP32,     None),
    ("quantile",                  None,                 FP32,     None),
    ("nanquantile",               None,                 FP32,     None),
    ("max_pool3d",                "MaxPool",            FP32,     None),     # ember: MaxPool serves 1-3d (see docs)
    ("adaptive_max_pool3d",       "AdaptiveMaxPool",    FP32,     None),     # likewise
    ("avg_pool3d",                None,                 FP32,     None),
    ("adaptive_avg_pool3d",       None,                 FP32,     None),
    ("grid_sampler",              None,                 FP32,     PROMOTE),
    # ---- promote to the widest input
    ("cat",                       "Cat",                PROMOTE,  None),     # CUDA: cat's own type promotion
    ("stack",                     "Stack",              PROMOTE,  None),     # likewise
    ("index_copy",                "IndexCopy",          PROMOTE,  None),
    ("atan2",                     "Atan2",              None,     PROMOTE),
    ("index_put",                 None,                 None,     PROMOTE),
    ("scatter_add",               "ScatterAdd",         None,     PROMOTE),
    ("addcdiv",                   None,                 None,     PROMOTE),
    ("addcmul",                   None,                 None,     PROMOTE),
    ("bilinear",                  None,                 None,     PROMOTE),
    ("cross",                     None,                 None,     PROMOTE),
    ("tensordot",                 None,                 None,     PROMOTE),
)

# the device types PyTorch's lists above are written for; another device type autocasts by CUDA's
LIST_COLUMN = {"cpu": 2, "cuda": 3}


def declared_policy(Op, device_type: str):
    """The policy an Op's declaration gives on ``device_type`` (None where it gives none)."""
    decl = Op.autocast
    if not decl:
        return None
    return decl.get(device_type) if device_type in LIST_COLUMN else decl.get(device_type, decl.get("cuda"))


def policies(device_type: str) -> dict:
    """``{ember Op name: policy}`` for ``device_type``: an Op's declaration, else the first row naming it."""
    col = LIST_COLUMN.get(device_type, 3)
    out: dict = {key: declared_policy(Op, device_type) for key, Op in OPS.items() if Op.autocast}
    for row in ROWS:
        op = row[1]
        if op is not None and op not in out:
            out[op] = row[col]
    return {op: p for op, p in out.items() if p is not None}

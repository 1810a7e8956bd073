"""Where ember and PyTorch differ on the differential fuzzer's calls (:mod:`ember.testing.fuzz`), listed.

Each entry: the disagreement kind (or "*"), a pattern over the row name, a pattern over the detail, whether
the difference is ``deliberate`` or ``open`` (a known gap still to close), and why.  ``known`` is what
``tests/test_fuzz.py`` and ``python -m ember.testing.fuzz --known tests/fuzz_known_differences.py`` pass
to the fuzzer.  Keep the open entries narrow: each names one class of behaviour still to fix.
"""
import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Known:
    kind: str
    op: str
    detail: str
    status: str  # "deliberate" or "open"
    reason: str


KNOWN = [
    # ----------------------------------------------------------------------------------------- deliberate
    Known("exception", r".*", r"^(RuntimeError|LinAlgError) where PyTorch raised NotImplementedError", "deliberate",
          "a dtype a kernel lacks: ember raises RuntimeError (NotImplementedError's base) from its own argument "
          "check, naming the op and the dtype; code catching RuntimeError sees both"),
    Known("exception", r".*", r"where PyTorch raised AssertionError", "deliberate",
          "PyTorch checks multi_head_attention_forward's shapes with `assert` (gone under python -O); ember "
          "raises RuntimeError"),
    Known("exception", r".*_forms|.*_out", r"^(TypeError where PyTorch raised AttributeError|AttributeError "
          r"where PyTorch raised TypeError) \(\w+: .*'(float|int|bool)' object", "deliberate",
          "a number in place of a form row's first tensor: the row's function and method calls fail at different "
          "statements of the row (a Python float has no tensor methods in either library)"),
    Known("*", r"pinv|svd.*|cond.*|matrix_rank.*|lstsq.*|.*norm.*", r"!|converge", "deliberate",
          "SVD of a matrix holding inf: PyTorch's result is LAPACK's accident (finite, NaN or an error by "
          "shape and position); ember gives NaN factors and never calls LAPACK on non-finite input "
          "(tests/test_nonfinite.py)"),
    # ----------------------------------------------------------------------------------------- open
    Known("accepts", r".*", r"not implemented for '(Half|BFloat16|Bool|Byte|Char|Short|Int|Long|ComplexFloat|"
          r"ComplexHalf|ComplexDouble)'|Low precision dtypes not supported|expected a tensor of floating point|"
          r"does not support uint8|not implemented for complex", "open",
          "per-op dtype coverage is not declared yet: ember computes dtypes PyTorch's kernels lack"),
    Known("refuses", r".*", r"Expected a floating point or complex tensor as input. Got ember.complex", "open",
          "complex linear algebra (svd, qr, solve, lstsq, geqrf, triangular solves) is refused"),
    Known("accepts", r"conv\w*|cosine_similarity\w*|cholesky_solve\w*|fractional_max_pool\w*|triplet_margin\w*|"
          r"\w*cross_entropy\w*",
          r"expected scalar type|same dtype|common dtype|dtype as input|but found", "open",
          "operands of two dtypes (or integer operands) that PyTorch's kernels refuse: ember promotes them"),
    Known("exception", r".*", r"^(RuntimeError|IndexError|NotImplementedError|TypeError|ValueError) where PyTorch "
          r"raised (TypeError|IndexError|ValueError|RuntimeError)", "open",
          "a call that breaks several rules at once: ember's checks run in another order than PyTorch's, so "
          "another rule (and exception class) answers first"),
    Known("exception", r".*", r"^AttributeError where PyTorch raised TypeError", "open",
          "Tensor methods (and functions not behind the __torch_function__ check, such as the recurrent cells) "
          "given a number for a tensor argument raise AttributeError"),
    Known("exception", r"linear_cross_entropy\w*", r"^TypeError where PyTorch raised AttributeError", "deliberate",
          "PyTorch's Python linear_cross_entropy reads .dim() of a number (AttributeError); ember raises the "
          "TypeError PyTorch's functions raise for a number where a Tensor is required"),
    Known("flags", r"geqrf\w*|trapezoid|ldl_factor|native_group_norm|detach_copy|lu_factor\w*", r"requires_grad",
          "open",
          "requires_grad of outputs PyTorch marks differentiable (geqrf, ldl_factor, group norm's statistics, "
          "detach_copy) or not (trapezoid of an empty input)"),
    Known("values", r"addcdiv|grid_sample\w*", r".", "open",
          "complex addcdiv with inf, grid_sample at a NaN grid point"),
    Known("grad", r"max_pool2d_backward|gather_forms|grid_sample\w*|lu_factor\w*", r".", "open",
          "double backward of max pooling, 0-d gather index backward, bfloat16 grid_sample gradients"),
    Known("refuses", r"empty_reductions|soft_margin_loss|relu_grad", r".", "open",
          "complex amax of an empty input, soft_margin_loss's broadcast target, relu's gradient at integer output "
          "gradients"),
    Known("values", r"matrix_exp\w*", r"bfloat16", "deliberate",
          "PyTorch 2.13's bfloat16 matrix_exp overflows (-1e30, NaN); ember's is computed in float32 and rounded"),
    Known("accepts", r"kron|conv_tbc", r"view size is not compatible", "deliberate",
          "PyTorch 2.13's kron and conv_tbc fail on some non-contiguous inputs (they view where they must "
          "reshape)"),
    Known("accepts", r"\w*fft\w*", r"MKL FFT error", "deliberate",
          "PyTorch's MKL refuses some empty transforms; ember returns the empty result"),
    Known("grad", r"native_channel_shuffle", r"derivative for aten::native_channel_shuffle is not implemented",
          "deliberate", "ember differentiates native_channel_shuffle (a permutation); PyTorch has no formula"),
]


def known(kind: str, op: str, call: str, detail: str) -> bool:
    """Whether a fuzzer disagreement is listed above."""
    for k in KNOWN:
        if k.kind in ("*", kind) and re.fullmatch(k.op, op) and re.search(k.detail, detail + " " + call):
            return True
    return False

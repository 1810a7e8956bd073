"""``ember.backends``: PyTorch's per-library switches, with what each means in ember.

* ``cudnn``: ``enabled``, ``benchmark``, ``benchmark_limit``, ``deterministic``, ``allow_tf32``, ``is_available()``,
  ``version()``, ``flags(...)``. They choose among cuDNN algorithms where the CUDA backend runs an op through
  cuDNN; ``is_available()`` is True only with NVIDIA's cuDNN frontend installed. Without it they are accepted and
  have no effect. Determinism of ember's own kernels is :func:`ember.use_deterministic_algorithms`.
* ``cuda.matmul.allow_tf32`` (linked to :func:`ember.set_float32_matmul_precision`), ``cuda.is_built()``, the
  scaled-dot-product attention switches (accepted; ember has one attention path).
* ``mps.is_available()``/``is_built()``: False (no Metal backend). ``cpu.get_cpu_capability()``: the widest SIMD
  extension NumPy's kernels use here. ``mkl``, ``mkldnn``, ``openmp``, ``opt_einsum``, ``nnpack``: availability.
"""
from . import cpu, cuda, cudnn, mkl, mkldnn, mps, nnpack, openmp, opt_einsum  # noqa: F401

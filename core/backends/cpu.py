"""``ember.backends.cpu``: the SIMD level of the CPU kernels (NumPy's)."""
from __future__ import annotations


def get_cpu_capability() -> str:
    """"AVX512", "AVX2", "NEON" or "DEFAULT": the widest SIMD extension NumPy's kernels use on this CPU."""
    try:
        from numpy._core._multiarray_umath import __cpu_features__ as feats
    except ImportError:  # NumPy 1.x
        from numpy.core._multiarray_umath import __cpu_features__ as feats
    for name, label in (("AVX512_SKX", "AVX512"), ("AVX512F", "AVX512"), ("AVX2", "AVX2"), ("ASIMD", "NEON")):
        if feats.get(name):
            return label
    return "DEFAULT"

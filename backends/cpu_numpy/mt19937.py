"""PyTorch's CPU random engine: mt19937 seeded with the low 32 bits of the seed (``init_genrand``), its two
cached Box-Muller normals, and the 5056-byte state layout of ``torch.get_rng_state()``.

NumPy's ``MT19937`` bit generator draws the 32-bit words in bulk; a NumPy ``Generator`` on the same bit
generator serves the samplers PyTorch's CPU algorithm is not reproduced for (binomial), so every draw still
comes from the one seeded stream.
"""
from __future__ import annotations

import numpy as np

N = 624  # words of mt19937's state
STATE_BYTES = 5056  # sizeof PyTorch's CPUGeneratorImplState
# byte offsets of the state's fields (PyTorch's legacy POD, then the float normal cache)
_SEED, _LEFT, _SEEDED, _NEXT, _KEY = 0, 8, 12, 16, 24
_NORMAL_Y, _NORMAL_VALID, _FLOAT_NORMAL, _FLOAT_VALID = 5024, 5040, 5044, 5048


class TorchMT19937:
    """One CPU random stream, drawn as PyTorch's ``CPUGeneratorImpl`` draws it.

    ``words(n)`` gives the next ``n`` 32-bit outputs (``random()``), ``words64(n)`` the next ``n`` 64-bit ones
    (``random64()``: two words, the first one high); ``normal_double`` / ``normal_float`` hold the cached second
    normal of a Box-Muller pair (None when there is none).  Other attributes are those of a NumPy ``Generator``
    on the same stream.

    >>> g = TorchMT19937(0)
    >>> int(g.words(1)[0])
    2357136044
    """

    def __init__(self, seed: int):
        self.bits = np.random.MT19937(0)
        self._numpy = np.random.Generator(self.bits)
        self.seed(seed)

    def seed(self, seed: int) -> None:
        """Reseed (as ``manual_seed``): the cached normals are dropped."""
        self.initial_seed = int(seed) & 0xFFFF_FFFF_FFFF_FFFF
        self.bits._legacy_seeding(self.initial_seed & 0xFFFF_FFFF)
        self.normal_double = self.normal_float = None
        self._fresh = True  # no word drawn since seeding (PyTorch's state then says next = 0)

    def words(self, n: int) -> np.ndarray:
        """The next ``n`` 32-bit outputs (uint32)."""
        self._fresh = False
        if n < 4096:
            return self.bits.random_raw(n).astype(np.uint32)
        return self._numpy.integers(0, 1 << 32, size=n, dtype=np.uint32)  # (the raw words, without a uint64 array)

    def words64(self, n: int) -> np.ndarray:
        """The next ``n`` 64-bit outputs (uint64): pairs of words, the first the high half."""
        self._fresh = False
        if n < 2048:
            w = self.bits.random_raw(2 * n)
            return (w[0::2] << np.uint64(32)) | w[1::2]
        return self._numpy.integers(0, 1 << 64, size=n, dtype=np.uint64)  # (NumPy's next_uint64 draws just so)

    def __getattr__(self, name):  # NumPy's samplers on the same stream, for the kernels PyTorch's are not copied for
        if name.startswith("_"):
            raise AttributeError(name)
        self._fresh = False
        return getattr(self._numpy, name)

    def get_state(self) -> np.ndarray:
        """The state as PyTorch lays it out (5056 bytes): ``torch.set_rng_state`` loads it, and back."""
        st = self.bits.state["state"]
        pos = int(st["pos"])
        left, nxt = (1, 0 if self._fresh else N) if pos == N else (N - pos + 1, pos)
        out = np.zeros(STATE_BYTES, np.uint8)
        out[_SEED:_SEED + 8] = np.array([self.initial_seed], "<u8").view(np.uint8)
        out[_LEFT:_NEXT] = np.array([left, 1], "<i4").view(np.uint8)
        out[_NEXT:_KEY] = np.array([nxt], "<u8").view(np.uint8)
        out[_KEY:_KEY + 8 * N] = np.asarray(st["key"], "<u8").view(np.uint8)
        if self.normal_double is not None:
            out[_NORMAL_Y:_NORMAL_Y + 8] = np.array([self.normal_double], "<f8").view(np.uint8)
            out[_NORMAL_VALID] = 1
        if self.normal_float is not None:
            out[_FLOAT_NORMAL:_FLOAT_VALID] = np.array([self.normal_float], "<f4").view(np.uint8)
            out[_FLOAT_VALID] = 1
        return out

    def set_state(self, state) -> None:
        """Restore a state of :meth:`get_state` (or of ``torch.get_rng_state()``)."""
        b = np.ascontiguousarray(state, dtype=np.uint8).reshape(-1)
        if b.size != STATE_BYTES:
            raise RuntimeError(f"Expected a CPUGeneratorImplState of size {STATE_BYTES} but found the input RNG "
                               f"state size to be {b.size}")
        left, seeded = (int(v) for v in b[_LEFT:_NEXT].view("<i4"))
        nxt = int(b[_NEXT:_KEY].view("<u8")[0])
        if not (seeded and 0 < left <= N and nxt <= N):
            raise RuntimeError("Invalid mt19937 state")
        key = b[_KEY:_KEY + 8 * N].view("<u8").astype(np.uint32)
        self.bits.state = {"bit_generator": "MT19937", "state": {"key": key, "pos": N if left == 1 else nxt}}
        self.initial_seed = int(b[_SEED:_SEED + 8].view("<u8")[0])
        self._fresh = left == 1 and nxt == 0
        self.normal_double = float(b[_NORMAL_Y:_NORMAL_Y + 8].view("<f8")[0]) if b[_NORMAL_VALID] else None
        self.normal_float = float(b[_FLOAT_NORMAL:_FLOAT_VALID].view("<f4")[0]) if b[_FLOAT_VALID] else None

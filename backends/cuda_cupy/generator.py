"""A per-device random generator on CuPy with a saveable state.

cuRAND's state cannot be read back, so the stream is keyed by ``(seed, draws)``: whenever the
state is read or written the generator re-keys itself from that pair, so restoring a saved state
replays exactly what followed the save.
"""
from __future__ import annotations

import numpy as np

_MASK = (1 << 64) - 1


class CupyGenerator:
    """NumPy ``Generator`` methods on a ``cupy.random.RandomState`` of one device.

    ``integers`` and ``random`` map to ``randint`` and ``random_sample``; ``exponential`` draws
    ``standard_exponential`` and scales it (``RandomState.exponential`` checks its scale on the host,
    a device synchronisation); every other method (``uniform``, ``normal``, ``permutation``, ...)
    has the same name there.
    """

    def __init__(self, cp, index: int, seed: int):
        self.cp, self.index, self.seed, self.draws = cp, index, int(seed) & _MASK, 0
        self._rs = None

    def _state(self):
        if self._rs is None:
            key = self.seed if self.draws == 0 else \
                (self.seed * 6364136223846793005 + self.draws * 1442695040888963407) & _MASK
            with self.cp.cuda.Device(self.index):
                # a NumPy uint64: CuPy 13.0-13.2 under NumPy 2 rejects Python int seeds below 2**63
                self._rs = self.cp.random.RandomState(np.uint64(key))
        self.draws += 1
        return self._rs

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self._state(), name)

    def integers(self, low, high=None, size=None):
        return self._state().randint(low, high, size=size, dtype=np.int64)

    def random(self, size=None):
        return self._state().random_sample(size=size)

    def exponential(self, scale=1.0, size=None):
        x = self._state().standard_exponential(size=size)
        x *= scale
        return x

    def permutation(self, n):
        # RandomState.permutation takes a Python int for "a permuted range"
        return self._state().permutation(int(n))

    def get_state(self) -> np.ndarray:
        self._rs = None
        return np.array([self.seed, self.draws], dtype=np.uint64).view(np.uint8)

    def set_state(self, state) -> None:
        self.seed, self.draws = (int(v) for v in np.asarray(state, dtype=np.uint8).view(np.uint64))
        self._rs = None

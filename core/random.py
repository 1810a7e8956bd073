"""Random generators: one default per device, ``ember.Generator`` for private streams.

Each backend makes its own stream.  The CPU backend's is PyTorch's: mt19937 seeded as PyTorch seeds it, drawn by
PyTorch's CPU algorithms, with PyTorch's state layout, so ``manual_seed(s)`` gives PyTorch's numbers and a state
from ``torch.get_rng_state()`` loads here (and back).

>>> import ember
>>> _ = ember.manual_seed(0)
>>> a = ember.rand(2)
>>> _ = ember.manual_seed(0)
>>> bool((a == ember.rand(2)).all())
True
"""
from __future__ import annotations

import contextlib
import secrets

from .backend import BACKENDS, resolve
from .tensor import _wrap

DEFAULT_SEED = 67280421310721


class Generator:
    """A random stream on one device (``ember.Generator(device="cpu")``)."""

    def __init__(self, device=None):
        self.device = resolve(device if device is not None else "cpu")
        self._seed = DEFAULT_SEED
        self._native = self.device.backend.new_generator(self.device.index, DEFAULT_SEED)

    def manual_seed(self, seed: int) -> "Generator":
        """Reseed the stream; returns the generator."""
        seed = int(seed)
        if seed < 0:
            seed &= 0xFFFF_FFFF_FFFF_FFFF
        self._seed = seed
        self._native = self.device.backend.new_generator(self.device.index, seed)
        return self

    def seed(self) -> int:
        """Reseed from a non-deterministic source; returns the seed."""
        s = secrets.randbits(63)
        self.manual_seed(s)
        return s

    def initial_seed(self) -> int:
        """The seed the stream started from (the one a loaded state carries, where the backend keeps it)."""
        return getattr(self._native, "initial_seed", self._seed)

    def get_state(self):
        """The state as a uint8 tensor on the CPU (restore with :meth:`set_state`)."""
        cpu = resolve("cpu")
        return _wrap(cpu.backend.from_numpy(self.device.backend.generator_state(self._native), cpu.index), cpu)

    def set_state(self, state) -> "Generator":
        self.device.backend.set_generator_state(self._native, state.numpy() if hasattr(state, "numpy") else state)
        return self

    def __getstate__(self):
        return {"device": str(self.device), "seed": self._seed, "state": self.get_state().numpy()}

    def __setstate__(self, d):
        self.__init__(d["device"])
        self._seed = d["seed"]
        self.set_state(d["state"])


_defaults: dict = {}


def default_generator(dev=None) -> Generator:
    """The default generator of device ``dev`` (the default device when None)."""
    dev = resolve(dev)
    g = _defaults.get(dev)
    if g is None:
        g = _defaults[dev] = Generator(dev)
    return g


def native(generator, dev):
    """The backend generator to draw from for a tensor on ``dev``."""
    if generator is None:
        return default_generator(dev)._native
    if generator.device is not dev:
        raise RuntimeError(f"Expected a '{dev.type}' device type for generator but found '{generator.device.type}'")
    return generator._native


def manual_seed(seed: int) -> Generator:
    """Seed every device's default generator; returns the CPU default generator."""
    seed = int(seed)
    for name, backend in BACKENDS.items():
        if backend.is_available():
            count = backend.device_count() if backend.has_index() else 1
            for i in range(count):
                default_generator(f"{name}:{i}" if backend.has_index() else name).manual_seed(seed)
    return default_generator("cpu")


def seed() -> int:
    """Seed every default generator from a non-deterministic source; returns the seed."""
    s = default_generator("cpu").seed()
    manual_seed(s)
    return s


def initial_seed() -> int:
    return default_generator("cpu").initial_seed()


def get_rng_state():
    """The CPU default generator's state (a uint8 tensor)."""
    return default_generator("cpu").get_state()


def set_rng_state(new_state) -> None:
    default_generator("cpu").set_state(new_state)


def default_states() -> list:
    """``(generator, state)`` for every default generator made so far, on any device (for
    :func:`restore_default_states`: code that must leave all random streams as they were)."""
    states = []
    for g in list(_defaults.values()):
        try:
            states.append((g, g.get_state()))
        except Exception:  # noqa: BLE001 - a device whose backend is gone, or one without a generator state
            continue
    return states


def restore_default_states(states) -> None:
    for g, state in states:
        g.set_state(state)


@contextlib.contextmanager
def fork_rng(devices=None, enabled: bool = True, _caller: str = "fork_rng", _devices_kw: str = "devices",
             device_type: str = "cuda"):
    """Random draws inside the block leave the CPU generator, and those of ``devices`` of ``device_type``
    (every such device when None), as they were before it.

    >>> import ember
    >>> with ember.random.fork_rng():
    ...     a = ember.rand(2)
    >>> ember.equal(a, ember.rand(2))
    True
    """
    if not enabled:
        yield
        return
    gens = [default_generator("cpu")]
    backend = BACKENDS.get(device_type)
    if device_type != "cpu" and backend is not None and backend.is_available():
        if devices is None:
            devices = range(backend.device_count() if backend.has_index() else 1)
        for d in devices:
            gens.append(default_generator(f"{device_type}:{d}" if isinstance(d, int) else d))
    saved = [(g, g.get_state()) for g in gens]
    try:
        yield
    finally:
        restore_default_states(saved)

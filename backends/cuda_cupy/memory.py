"""Allocation statistics over CuPy's memory pool: current and peak bytes, per device.

CuPy's pool knows what is in use now (``used_bytes``) and what it holds (``total_bytes``) on the
current device; peaks are taken after allocations, the only moment a peak can grow.  ``used_bytes``
walks every live block (up to CuPy 13), so it is not called on every allocation: an upper bound of the
bytes in use (the last exact count plus what was allocated since; frees only lower it) is kept, and
the exact count is taken only when that bound passes the peak.
"""
from __future__ import annotations

from ember.accelerator import OutOfMemoryError

# CuPy's pool rounds every request up to a multiple of this many bytes
_UNIT = 512


class PeakTracker:
    """The pool's allocator, recording per-device peaks of used and reserved bytes."""

    def __init__(self, cp, pool):
        self.cp = cp
        self.pool = pool
        self.peak_used = {}
        self.peak_reserved = {}
        self.bound = {}

    def malloc(self, size):
        try:
            mem = self.pool.malloc(size)
        except self.cp.cuda.memory.OutOfMemoryError as e:  # the pool has already freed its cache and retried
            raise OutOfMemoryError(f"CUDA out of memory. Tried to allocate {size} bytes: {e}") from e
        dev = mem.device_id
        peak = self.peak_used.get(dev, -1)
        bound = self.bound.get(dev)
        if bound is not None:
            bound += max(mem.mem.size, -(-size // _UNIT) * _UNIT)
        if bound is None or bound > peak:
            bound = self.pool.used_bytes()
            if bound > peak:
                self.peak_used[dev] = bound
        self.bound[dev] = bound
        reserved = self.pool.total_bytes()
        if reserved > self.peak_reserved.get(dev, 0):
            self.peak_reserved[dev] = reserved
        return mem

    def stats(self, dev: int) -> dict:
        """PyTorch-style counters for device ``dev`` (which must be current)."""
        used, reserved = self.pool.used_bytes(), self.pool.total_bytes()
        self.bound[dev] = used
        return {"allocated_bytes.all.current": used,
                "allocated_bytes.all.peak": max(used, self.peak_used.get(dev, 0)),
                "reserved_bytes.all.current": reserved,
                "reserved_bytes.all.peak": max(reserved, self.peak_reserved.get(dev, 0))}

    def reset_peak(self, dev: int) -> None:
        self.peak_used[dev] = self.bound[dev] = self.pool.used_bytes()
        self.peak_reserved[dev] = self.pool.total_bytes()

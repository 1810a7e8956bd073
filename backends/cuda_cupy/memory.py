"""Allocation statistics over CuPy's memory pool: current and peak bytes, per device.

CuPy's pool knows what is in use now (``used_bytes``) and what it holds (``total_bytes``) on the
current device; peaks are taken after every allocation, the only moment a peak can grow.
"""
from __future__ import annotations


class PeakTracker:
    """The pool's allocator, recording per-device peaks of used and reserved bytes."""

    def __init__(self, cp, pool):
        self.cp = cp
        self.pool = pool
        self.peak_used = {}
        self.peak_reserved = {}

    def malloc(self, size):
        mem = self.pool.malloc(size)
        dev = mem.device_id
        used = self.pool.used_bytes()
        if used > self.peak_used.get(dev, 0):
            self.peak_used[dev] = used
        reserved = self.pool.total_bytes()
        if reserved > self.peak_reserved.get(dev, 0):
            self.peak_reserved[dev] = reserved
        return mem

    def stats(self, dev: int) -> dict:
        """PyTorch-style counters for device ``dev`` (which must be current)."""
        used, reserved = self.pool.used_bytes(), self.pool.total_bytes()
        return {"allocated_bytes.all.current": used,
                "allocated_bytes.all.peak": max(used, self.peak_used.get(dev, 0)),
                "reserved_bytes.all.current": reserved,
                "reserved_bytes.all.peak": max(reserved, self.peak_reserved.get(dev, 0))}

    def reset_peak(self, dev: int) -> None:
        self.peak_used[dev] = self.pool.used_bytes()
        self.peak_reserved[dev] = self.pool.total_bytes()

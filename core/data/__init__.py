"""Small public-domain data shipped with ember for the examples (``alice.txt``: the opening of
Lewis Carroll's *Alice's Adventures in Wonderland*, 1865)."""
from __future__ import annotations

from pathlib import Path

HERE = Path(__file__).parent


def path(name: str) -> Path:
    """The path of a bundled data file."""
    p = HERE / name
    if not p.exists():
        raise FileNotFoundError(f"ember ships no data file named {name!r} (have: "
                                f"{sorted(x.name for x in HERE.glob('*.txt'))})")
    return p

"""A YAML alias bomb (billion laughs) of a chosen depth."""

from __future__ import annotations


def bomb(levels: int) -> str:
    """Billion laughs: each level nine aliases of the one before (9 ** levels strings from a few hundred bytes)."""
    lines = ['l0: &l0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    lines += [f"l{n}: &l{n} [" + ", ".join([f"*l{n - 1}"] * 9) + "]" for n in range(1, levels)]
    return "{" + ", ".join(lines) + "}"

"""A count per file that may only fall (the structure tests' ratchets): what grew past its entry, and
what fell below it (an entry to lower, so the ratchet holds the new count)."""
from __future__ import annotations


def moved(found: dict[str, int], allowed: dict[str, int]) -> tuple[dict, dict]:
    """(grown, fallen): file -> (allowed, found) where the count rose above its entry, and where it fell below."""
    grown = {name: (allowed.get(name, 0), count) for name, count in found.items() if count > allowed.get(name, 0)}
    fallen = {name: (count, found.get(name, 0)) for name, count in allowed.items() if found.get(name, 0) < count}
    return grown, fallen

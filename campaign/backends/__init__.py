"""Backends by name: the only place a backend name is turned into behaviour."""
from __future__ import annotations

from campaign.backends.base import Backend
from campaign.backends.cpu import CpuBackend
from campaign.backends.cuda import CudaBackend
from campaign.backends.musa import MusaBackend

BACKENDS: dict[str, type] = {"cuda": CudaBackend, "musa": MusaBackend, "cpu": CpuBackend}


def get_backend(name: str) -> Backend:
    try:
        return BACKENDS[name]()
    except KeyError:
        raise ValueError(f"unknown backend {name!r}; known: {', '.join(sorted(BACKENDS))}") from None


def visibility_variables() -> tuple[str, ...]:
    """Every backend's visibility variable, sorted: what a cell's env may inherit."""
    return tuple(sorted({cls().visibility_variable for cls in BACKENDS.values()} - {None}))

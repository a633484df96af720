"""Backends by name: the only place a backend name is turned into behaviour.

The names, and what each backend is as data, are `campaign.contract.platforms`; a module
here is the code behind one of them, registered below (tests/structure/test_vocabulary.py holds the
two lists equal).
"""
from __future__ import annotations

from campaign.backends.base import Backend
from campaign.backends.cpu import CpuBackend
from campaign.backends.cuda import CudaBackend
from campaign.backends.musa import MusaBackend
from campaign.backends.rocm import RocmBackend
from campaign.contract.platforms import BACKEND_NAMES, visibility_variables  # noqa: F401 (callers read it here)

BACKENDS: dict[str, type] = {cls.name: cls for cls in (CudaBackend, MusaBackend, RocmBackend, CpuBackend)}


def get_backend(name: str) -> Backend:
    try:
        return BACKENDS[name]()
    except KeyError:
        raise ValueError(f"unknown backend {name!r}; known: {', '.join(sorted(BACKEND_NAMES))}") from None

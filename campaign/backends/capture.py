"""Classifying a graph-capture failure by its wording: the policy shared by every backend.

Three verdicts (`campaign.backends.base.CaptureVerdict`):

- ``fatal``: the kernel itself faulted on the device. Re-raise: a fallback latency
  would report a broken kernel as a measurement.
- ``poisoned``: the capture attempt left the context unusable; falling back would
  measure inside a dead process (observed as a fallback marker, a teardown crash
  and zero rows). Raise under BENCHMARK_CAPTURE_POISONED.
- ``fallback``: anything else -- a kernel refusing capture is ordinary. The row is
  re-timed uncaptured, so a genuine device fault the wording missed still surfaces
  there as an error rather than as a number.

Phrases are matched case-insensitively as substrings and must be specific: newer
torch appends "Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions."
to every CUDA error, so a loose "device-side assert" would call every ordinary
capture refusal fatal and disable the fallback entirely.
"""
from __future__ import annotations

from campaign.backends.base import CaptureVerdict


def classify(text: str, fatal: tuple[str, ...], poisoned: tuple[str, ...]) -> CaptureVerdict:
    lowered = text.lower()
    if any(phrase in lowered for phrase in fatal):
        return "fatal"
    if any(phrase in lowered for phrase in poisoned):
        return "poisoned"
    return "fallback"


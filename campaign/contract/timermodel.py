"""The manifest's ``timer``: how a row is timed (`campaign.contract.timers`: what each timer's number
is, and the noise target's rule). A model of its own beside `campaign.contract.manifest`, which holds it."""
from __future__ import annotations

from typing import Annotated, Literal, Optional

from pydantic import Field, model_serializer, model_validator

from campaign.contract.fields import (
    MAX_NOISE_SAMPLES,
    MAX_NOISE_TIMEOUT_S,
    NOISE_MIN_SAMPLES,
    NOISE_TIMEOUT_S,
    Count,
    FieldError,
    Millis,
    Model,
)
from campaign.contract.timers import TIMER_KINDS


class Timer(Model):
    """How a row is timed. ``max_noise_pct`` sets a noise target: a row's samples are taken until
    their relative spread is at most that many percent, at least ``min_samples`` of them, or until
    ``timeout_s`` seconds of sampling (`campaign.contract.timers`: what a sample and the spread are);
    given alone, the other two take nvbench's defaults (10 samples, 15 s)."""

    kind: Literal[TIMER_KINDS] = "graph"
    warmup_ms: Millis = 25.0
    rep_ms: Millis = 100.0
    return_mode: Literal["median", "mean", "min", "max"] = "median"
    direct_repeat: Optional[Annotated[Count, Field(le=1000)]] = None
    max_noise_pct: Optional[Annotated[float, Field(strict=True, gt=0, le=100, allow_inf_nan=False)]] = None
    min_samples: Optional[Annotated[int, Field(strict=True, ge=2, le=MAX_NOISE_SAMPLES)]] = None
    timeout_s: Optional[Annotated[float, Field(strict=True, gt=0, le=MAX_NOISE_TIMEOUT_S, allow_inf_nan=False)]] = None

    @model_validator(mode="before")
    @classmethod
    def _noise_defaults(cls, data: object) -> object:
        # written into matrix.json, so the frozen campaign says what its rows were sampled to
        if isinstance(data, dict) and data.get("max_noise_pct") is not None:
            data = {"min_samples": NOISE_MIN_SAMPLES, "timeout_s": NOISE_TIMEOUT_S, **data}
        return data

    @model_serializer(mode="wrap")
    def _noise_only_when_set(self, handler):
        # a matrix frozen without a noise target dumps to the bytes it had before the keys existed
        data = handler(self)
        for key in ("max_noise_pct", "min_samples", "timeout_s"):
            if data.get(key, 0) is None:
                del data[key]
        return data

    @model_validator(mode="after")
    def _repeat_is_median(self) -> "Timer":
        if self.direct_repeat is not None and self.return_mode != "median":
            raise FieldError(("return_mode",), "direct_repeat takes the median of repeats; return_mode must be median")
        if self.direct_repeat is not None and self.kind == "event":
            # only direct-timed rows repeat: kind direct, or graph rows that fell back
            raise FieldError(("direct_repeat",), "event rows are never direct-timed: direct_repeat needs kind direct or graph")
        if self.max_noise_pct is None:
            given = [key for key in ("min_samples", "timeout_s") if getattr(self, key) is not None]
            if given:
                raise FieldError((given[0],), f"{given[0]} bounds the noise target: add max_noise_pct "
                                              "(e.g. max_noise_pct: 0.5), or remove it")
        elif self.direct_repeat is not None:
            raise FieldError(("direct_repeat",), "under a noise target direct rows take do_bench calls until the "
                                                 "target (at least min_samples): remove direct_repeat")
        return self

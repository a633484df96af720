"""The manifest's field types and bounds, and the error a cross-field rule raises: what
`campaign.contract.workloads` and `campaign.contract.manifest` build their models from.
"""
from __future__ import annotations

import difflib
from typing import Annotated, Final, Literal, Optional

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StringConstraints

from campaign.contract import platforms

# Numbers are strict (YAML's true or "600" is not an integer; .inf is not a time) and
# bounded, so a typo cannot expand into a million-round matrix or a year-long timeout.
MAX_TIMEOUT_S = 86_400                  # one cell, one day
MAX_ROUNDS = 100
# rounds.stop: fixed (``count`` rounds) or decided (from ``min`` to ``max``, `campaign.judging.stopping`)
STOP_RULES = ("fixed", "decided")
# How autotune configs reach the sides (`defaults.tuning`): pinned, round 1's baseline records and every
# other cell replays ("what does the switch do to the same kernels"); per_side, every timed cell tunes
# for itself and nothing replays ("what does a user see end to end, retuning included").
TuningMode = Literal["pinned", "per_side"]            # the type a model field takes
PINNED: Final[TuningMode] = "pinned"
PER_SIDE: Final[TuningMode] = "per_side"
TUNING_MODES = (PINNED, PER_SIDE)
MIN_ADAPTIVE_ROUNDS = 4                 # two in each run order: what a direction needs
MAX_WORKLOADS_PER_PROCESS = 256
MAX_IR_PASS_LANES = 32
MAX_MS = 60_000                         # timer windows, per measurement
# A row's noise target (`campaign.contract.timers`): nvbench's defaults for --min-samples and
# --timeout where the manifest gives only max_noise_pct, and the bounds of each.
NOISE_MIN_SAMPLES = 10
NOISE_TIMEOUT_S = 15.0
MAX_NOISE_SAMPLES = 100_000
MAX_NOISE_TIMEOUT_S = 3_600.0
Count = Annotated[int, Field(strict=True, ge=1)]
Seconds = Annotated[int, Field(strict=True, ge=1, le=MAX_TIMEOUT_S)]
Millis = Annotated[float, Field(strict=True, gt=0, le=MAX_MS, allow_inf_nan=False)]

# torch dtype names (the timing plugin looks them up on torch); one spelling each,
# because the name is recorded in every row and compared across cells.
DTYPES = ("bfloat16", "bool", "complex128", "complex64", "float16", "float32", "float64",
          "int16", "int32", "int64", "int8", "uint8")
_DTYPE_ALIASES = {"fp16": "float16", "half": "float16", "f16": "float16", "bf16": "bfloat16",
                  "fp32": "float32", "float": "float32", "f32": "float32", "fp64": "float64",
                  "double": "float64", "f64": "float64", "int": "int32", "long": "int64"}


def _known_dtype(name: str) -> str:
    if name in DTYPES:
        return name
    key = name.lower()
    guess = key if key in DTYPES else _DTYPE_ALIASES.get(key) or next(iter(difflib.get_close_matches(key, DTYPES, n=1)), None)
    hint = f": did you mean {guess}?" if guess else f"; known: {', '.join(DTYPES)}"
    raise ValueError(f"unknown dtype {name!r}{hint}")


def integer_only(value: object) -> object:
    # a Literal compares with ==, so true and 1.0 would pass as 1; pydantic has no strict Literal
    if type(value) is not int:
        raise ValueError(f"Input should be an integer, not {type(value).__name__}")
    return value


DType = Annotated[str, AfterValidator(_known_dtype),
                  Field(json_schema_extra={"enum": list(DTYPES)})]

# Linux takes a path of at most 4,096 bytes (PATH_MAX) and a name in it of at most 255 (NAME_MAX): a
# longer one is refused here, located, not by ENAMETOOLONG from the first stat that meets it.
MAX_PATH_BYTES = 4096
MAX_NAME_BYTES = 255


def _path_bounds(text: str) -> str:
    size = len(text.encode("utf-8", "surrogatepass"))
    if size > MAX_PATH_BYTES:
        raise ValueError(f"a path of {size:,} bytes: the OS takes at most {MAX_PATH_BYTES:,} (PATH_MAX)")
    name = max(text.split("/"), key=lambda part: len(part.encode("utf-8", "surrogatepass")))
    if (size := len(name.encode("utf-8", "surrogatepass"))) > MAX_NAME_BYTES:
        raise ValueError(f"a name of {size:,} bytes ({name[:16]}...): the OS takes at most {MAX_NAME_BYTES} "
                         "bytes a name (NAME_MAX)")
    return text


def _target_bounds(text: str) -> str:
    _path_bounds(text.partition("::")[0])
    return text


PathText = Annotated[str, StringConstraints(min_length=1), AfterValidator(_path_bounds)]
NodeText = Annotated[str, AfterValidator(_target_bounds)]      # a node id: its file part is a path
CampaignId = Annotated[str, StringConstraints(pattern=r"^[a-z0-9][a-z0-9-]*$", max_length=80)]
WorkloadName = Annotated[str, StringConstraints(pattern=r"^[a-z0-9][a-z0-9_.-]*$", max_length=80)]
EnvName = Annotated[str, StringConstraints(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$", max_length=128)]
EnvValue = Annotated[str, Field(strict=True)]
Reason = Annotated[str, StringConstraints(min_length=8, strip_whitespace=True)]
# a file, a function of it, or one parametrised node id of it (its [params] checked at prepare)
Target = Annotated[str, StringConstraints(pattern=r"^[^:\s]+\.py(::[A-Za-z_][A-Za-z0-9_]*(\[[^\]\s]+\])?)?$"),
                  AfterValidator(_target_bounds)]

# A task's cell: the reference, the switch's plumbing with the switch off, the switch on. Spelled here
# only (`tests/structure/test_vocabulary.py`); every other module reads these names, so a typo is a
# NameError or a type error, never a silent ``.get()`` miss.
Cell = Literal["baseline", "control", "candidate"]
BASELINE: Final = "baseline"
CONTROL: Final = "control"
CANDIDATE: Final = "candidate"
CELL_NAMES: tuple[Cell, ...] = (BASELINE, CONTROL, CANDIDATE)
# Every stage of every target family (`campaign.contract.platforms`): what ir_stage may name.
IR_STAGES = platforms.IR_STAGES


def stages_below(stage: str, backend: Optional[str] = None) -> tuple[str, ...]:
    """The IR stages after ``stage``: where a switch that moved the timing but not ``stage``'s IR acts.
    In ``backend``'s one target family where it has one (every backend that times); without it, in
    the list of every family's stages, which can name another family's (cuda's ptx below hip's llir)."""
    families = platforms.platform(backend).families if backend is not None else ()
    stages = platforms.BY_FAMILY[families[0]].ir_stages if len(families) == 1 else IR_STAGES
    return stages[stages.index(stage) + 1:] if stage in stages else ()


Loc = tuple[object, ...]     # a key path below a model: names and list indices


class FieldError(ValueError):
    """A cross-field rule's failure, carrying the path below the validated model.

    pydantic keeps the raised exception in the error's ``ctx``; `campaign.contract.yamlio`
    appends ``loc`` so the message points at the offending key, not the section,
    and reports every one of ``problems`` (more than one when a rule finds several).
    """

    def __init__(self, loc: Loc, message: str, problems: tuple[tuple[Loc, str], ...] = ()):
        super().__init__(message)
        self.loc = loc
        self.problems = problems or ((loc, message),)

    @classmethod
    def every(cls, problems: list[tuple[Loc, str]]) -> "FieldError":
        loc, message = problems[0]
        return cls(loc, message, tuple(problems))


class Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

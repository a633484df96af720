"""A manifest's workloads: what each one times and checks, and any narrowing with its reason."""
from __future__ import annotations

import re
from typing import Annotated, Any, Literal, Optional

from pydantic import ConfigDict, Field, StrictBool, StringConstraints, model_validator

from campaign.contract.fields import MAX_TIMEOUT_S, DType, FieldError, Model, NodeText, PathText, Reason, Seconds, Target, WorkloadName


class Correctness(Model):
    """Narrowed correctness: node ids or a -k selector, never both."""

    model_config = ConfigDict(extra="forbid", frozen=True, json_schema_extra={
        "oneOf": [{"required": ["node_ids"]}, {"required": ["k"]}]})

    node_ids: Optional[tuple[NodeText, ...]] = None
    k: Optional[str] = None

    @model_validator(mode="after")
    def _one_of(self) -> "Correctness":
        if self.node_ids is not None and self.k is not None:
            raise FieldError(("k",), "give node_ids or k, never both")
        if self.node_ids is None and self.k is None:
            raise ValueError("give node_ids or k (or leave correctness out to use the inventory's target)")
        if self.node_ids is not None and not self.node_ids:
            raise FieldError(("node_ids",), "node_ids is empty")
        return self


OWN_PREFIXES = ("/", "./", "../", "~/")


def own_path(target: object) -> bool:
    """A target outside the project, a file of the user's own: absolute, or relative to the manifest's
    folder when it starts with ``./`` or ``../`` (any other relative path is the project's)."""
    return isinstance(target, str) and target.startswith(OWN_PREFIXES)


def own_test_op(benchmark: object) -> Optional[str]:
    """A pytest workload's default op: its test file's stem, lowercased, minus a ``test_`` prefix."""
    if not isinstance(benchmark, str) or ".py" not in benchmark:
        return None
    stem = benchmark.partition("::")[0].rsplit("/", 1)[-1].removesuffix(".py").lower()
    stem = re.sub(r"[^a-z0-9_]", "_", stem.removeprefix("test_")) or "test"
    return stem


class Workload(Model):
    # narrowing needs a stated reason (a pytest file's own correctness node ids narrow nothing):
    # expressed for JSON Schema users too
    model_config = ConfigDict(extra="forbid", frozen=True, json_schema_extra={
        "dependentRequired": {"shapes": ["reason"]},
        "if": {"properties": {"provider": {"const": "pytest"}}, "required": ["provider"]},
        "then": {"required": ["benchmark"], "not": {"anyOf": [{"required": ["dtypes"]}, {"required": ["shapes"]}]}},
        "else": {"required": ["op"], "dependentRequired": {"correctness": ["reason"]},
                 "not": {"required": ["data"]}}})

    name: WorkloadName
    # Optional only for provider pytest, whose op defaults to the test file's stem (`_own_test_op`).
    op: Optional[Annotated[str, StringConstraints(pattern=r"^[a-z0-9_]+$")]] = None
    # pytest: a user's own test file that times with triton.testing.do_bench (`campaign.plugins.dobench`)
    # flaggems_upstream: FlagGems' own benchmark items from sources.flag_gems_checkout; op is their op mark
    provider: Literal["builtin", "flaggems", "pytest", "flaggems_upstream"] = "builtin"
    benchmark: Optional[Target] = None
    correctness: Optional[Correctness] = None
    dtypes: Optional[tuple[DType, ...]] = None
    shapes: Optional[tuple[Annotated[str, StringConstraints(min_length=1)], ...]] = None
    # provider pytest: files the test reads besides code (absolute or relative to the manifest's folder),
    # digested at prepare with the file (`campaign.planning.ownfile`)
    data: Optional[tuple[PathText, ...]] = None
    timeout_s: Optional[Seconds] = None
    # Seconds one screened round took (`campaign screen`): N rounds cost about N times it.
    # A round is at most three cells, each under the timeout cap.
    weight_s: Optional[Annotated[float, Field(strict=True, ge=0, le=3 * MAX_TIMEOUT_S, allow_inf_nan=False)]] = None
    canary: StrictBool = False
    reason: Optional[Reason] = None

    @model_validator(mode="before")
    @classmethod
    def _own_test_op(cls, data: Any) -> Any:
        if isinstance(data, dict) and data.get("provider") == "pytest" and data.get("op") is None:
            stem = own_test_op(data.get("benchmark"))
            if stem is not None:
                data = {**data, "op": stem}
        return data

    @model_validator(mode="after")
    def _per_provider(self) -> "Workload":
        if self.provider != "pytest":
            if own_path(self.benchmark):
                raise FieldError(("benchmark",), f"{self.benchmark} is a file of your own, outside the project: such a "
                                                 "file is timed as provider: pytest (its parametrization is its shapes); "
                                                 "add provider: pytest")
            if self.data is not None:
                raise FieldError(("data",), "data lists the files a provider pytest test reads; leave it out")
            if self.op is None:
                raise FieldError(("op",), "Field required: the op names the workload's shapes and inventory entry")
            return self
        if self.benchmark is None:
            raise FieldError(("benchmark",), "provider pytest times a test file: name it (file.py, file.py::test_function "
                                             "or one node id), in the project, or your own: absolute, or ./ or ../ "
                                             "relative to the manifest's folder")
        # the test builds its own inputs: a planned dtype or shape would be a label with nothing behind it
        for field in ("dtypes", "shapes"):
            if getattr(self, field) is not None:
                raise FieldError((field,), f"provider pytest takes its {field} from the test itself; leave {field} out")
        return self

    @model_validator(mode="after")
    def _narrowing_has_reason(self) -> "Workload":
        # a pytest file's correctness is its own tests: naming some of them narrows nothing
        named = self.correctness if self.provider != "pytest" else None
        narrowed = [what for what, present in (
            ("correctness node_ids", named is not None and named.node_ids is not None),
            ("correctness -k", named is not None and named.k is not None),
            ("a shape subset", self.shapes is not None),
        ) if present]
        if self.dtypes is not None and not self.dtypes:
            raise FieldError(("dtypes",), "dtypes is empty: leave it out to use the op's own set")
        if self.shapes is not None and not self.shapes:
            raise FieldError(("shapes",), "shapes is empty: a subset of no shapes measures nothing; leave it out to use them all")
        if narrowed and self.reason is None:
            raise FieldError(("reason",), f"narrowing ({', '.join(narrowed)}) requires a reason")
        return self

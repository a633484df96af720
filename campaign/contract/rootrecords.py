"""prepare.json, run_identity.json and rescore.json as models, matching what is written today.

Fields a later version added carry a default and are left out of `SealedRecord.dump`
when the file read did not hold them, so a committed root's records dump back to
the same canonical bytes. The verdicts are `campaign.contract.records`.
"""
from __future__ import annotations

from typing import Literal, Optional

from pydantic import model_validator

from campaign.contract.fields import PINNED, TuningMode
from campaign.contract.records import SealedRecord, Sha256


class ResolvedTargets(SealedRecord):
    benchmark: str
    correctness: str
    correctness_node_ids: tuple[str, ...]
    correctness_k: Optional[str]
    dtypes: tuple[str, ...]
    shapes: Optional[tuple[str, ...]]              # None: the op's full set at the bench level
    family: Optional[str]                          # None: not in the inventory (a pytest workload)
    shape_file: Optional[str] = None               # the campaign's own (defaults.shape_file), absolute; digested
    rootdir: Optional[str] = None                  # a test file of the user's own: its pytest rootdir; targets absolute
    data: tuple[str, ...] = ()                     # the data files that file reads, absolute; digested


class InstalledDistribution(SealedRecord):
    """An installed package a cell imports, its files checked against its own RECORD at prepare
    (`campaign.planning.installedcode`)."""

    name: str
    version: str
    record_sha256: Sha256                          # RECORD's own bytes: what the files were checked against
    files: int                                     # RECORD's files whose sha256 was compared
    # the lstat of its module files, executables and folders after the check: preflight's fast path
    fingerprint: Sha256


class InstalledCode(SealedRecord):
    """What runs in a worker besides the harness: the installed packages (None: not installed), and
    the code the interpreter runs as it starts (every ``.pth`` file of its site folders, a
    ``sitecustomize`` or ``usercustomize`` module), absolute path -> sha256."""

    distributions: dict[str, Optional[InstalledDistribution]]
    startup: dict[str, Sha256]


class Shard(SealedRecord):
    """One root of a campaign prepared as shards (`campaign prepare --shards`): each runs and seals
    on its own, and `campaign report` reads the whole set as one answer (`campaign.flows.shardset`)."""

    index: int                                     # this shard, 1-based
    of: int                                        # how many shards the set has
    set_id: Sha256                                 # digest of the whole manifest's sha256 and the partition
    manifest_sha256: Sha256                        # the whole manifest's (prepare.json's own is this shard's)
    workloads: tuple[tuple[str, ...], ...]         # every shard's workloads, shard 1 first

    @model_validator(mode="after")
    def _one_of_its_set(self) -> "Shard":
        if not 1 <= self.index <= self.of or len(self.workloads) != self.of:
            raise ValueError(f"shard {self.index} of {self.of} with {len(self.workloads)} workload lists")
        return self


class Prepare(SealedRecord):
    """prepare.json: digests taken before anything runs."""

    schema_version: Literal[1]
    campaign: str
    created_utc: str
    project_root: str
    manifest_source: str
    manifest_sha256: Sha256
    inventory_sha256: Sha256
    harness: dict[str, Sha256]
    harness_digest: Sha256
    tool_version: str
    python: str
    platform: str
    tasks: int
    resolved_targets: dict[str, ResolvedTargets]
    # absent before `campaign screen` froze roots of its own: those are campaign roots
    mode: Literal["campaign", "screen"] = "campaign"
    # absent before installed packages were checked against their RECORD at prepare
    installed: Optional[InstalledCode] = None
    # "chained" since each line of digests.jsonl carries the digest of the one before (`campaign.contract.journal`);
    # absent before: an older root, checked against its receipt and its cell lines only
    journal: Optional[Literal["chained"]] = None
    # absent on a root prepared whole: present where `campaign prepare --shards` made it one of a set
    shard: Optional[Shard] = None


class Timer(SealedRecord):
    """What the manifest asked for; on a compile-only backend ``kind`` is "none", the rest null."""

    kind: str
    warmup_ms: Optional[float]
    rep_ms: Optional[float]
    return_mode: Optional[str]
    direct_repeat: Optional[int]
    l2_flush: Optional[bool]
    # the noise target (`campaign.contract.timers`); absent before rows could be sampled to one
    max_noise_pct: Optional[float] = None
    min_samples: Optional[int] = None
    timeout_s: Optional[float] = None


class FolderSize(SealedRecord):
    files: int
    bytes: int


class TunerStore(SealedRecord):
    tables: int
    rows: int


# The caliber: the keys of run_identity.json whose values must be equal across the cells of
# a comparison. Defined here, beside the record, because both sides use it: the plugin that
# writes every one of them and `campaign.judging.caliber`, which compares them.
CALIBER_FIELDS = (
    "backend", "device_name", "device_uuid", "device_target", "driver", "runtime", "torch", "triton", "flag_gems",
    "timer", "bench_level", "shape_mode", "tuner_cache", "direct_repeat", "autotune_policy", "autotune_from",
    "tuning",
)
# A caliber field's key in roots sealed before it was renamed: the device runtime's version was
# "cuda" until a second vendor's runtime (hip, musa) was recorded under the same key.
SEALED_AS = {"runtime": "cuda"}
# A caliber field's value in roots sealed before it was recorded, where every such root had one value:
# before per_side tuning existed, round 1's baseline recorded and every other cell replayed.
ABSENT_MEANS = {"tuning": PINNED}


class RunIdentity(SealedRecord):
    """run_identity.json: one cell's caliber (`campaign.plugins.run_identity` writes it)."""

    schema_version: Literal[1]
    task_id: str
    backend: str
    device_name: Optional[str]
    device_uuid: Optional[str]
    device_target: Optional[str]
    driver: Optional[str]
    # the device runtime's version (torch.version.cuda / .hip / .musa); one of the two keys,
    # "cuda" in roots sealed before the rename (`SEALED_AS`)
    runtime: Optional[str] = None
    cuda: Optional[str] = None
    torch: str
    triton: str
    triton_env: dict[str, str]
    flag_gems: Optional[str]
    python: str
    platform: str
    bench_level: str
    shape_mode: str
    tuner_cache: str
    autotune_mode: str
    autotune_source: Optional[str]
    autotune_policy: str
    autotune_from: Optional[Sha256] = None      # absent before configs could be pinned across roots
    # pinned, or per_side: every side tuned for itself (`campaign.contract.fields.TUNING_MODES`); absent
    # before the mode existed, when every root was pinned (`ABSENT_MEANS`)
    tuning: TuningMode = PINNED
    env: dict[str, str]
    pinned_env: dict[str, str]
    harness_digest: Optional[str]
    timer: Timer
    direct_repeat: Optional[int]
    # absent from the first H200 roots (recorded since tuner-cache isolation and inherited code paths)
    tuner_cache_at_start: Optional[FolderSize] = None
    # absent before batches emptied FlagGems' tuner store between workloads
    tuner_store_at_start: Optional[TunerStore] = None
    inherited_env: dict[str, str] = {}
    # on a backend that compiles offline, the device record FlagGems was answered from
    # (`campaign.plugins.flaggems_offline`: "<target> sha256:<record digest>"); null elsewhere
    offline_device: Optional[str] = None

    @model_validator(mode="before")
    @classmethod
    def _one_runtime_key(cls, data: object) -> object:
        if isinstance(data, dict) and sum(key in data for key in ("runtime", "cuda")) != 1:
            raise ValueError("run_identity.json names the runtime version once: runtime (or cuda, sealed before it)")
        return data


class RescoreRule(SealedRecord):
    ir_stage: str
    measured_launch_floor: int
    strip_annotations: tuple[str, ...]
    strip_annotations_added: tuple[str, ...]       # given to --rescore on top of the manifest's
    fingerprint: str
    code: dict[str, Sha256]                        # the rule's source files -> their digests


class RescoreChange(SealedRecord):
    workload: str
    before: Optional[str]                          # None: the sealed table had no row for it
    after: str


class Rescore(SealedRecord):
    """rescore.json, beside a rescored screen root (`campaign screen --rescore`)."""

    schema_version: Literal[1]
    root: str
    tool_version: str
    created_utc: str
    receipt_sha256: Sha256
    rule: RescoreRule
    changes: tuple[RescoreChange, ...]

"""The environment a cell's worker starts with: pure functions, no os.environ inside.

A cell inherits only what it needs to find its tools (an explicit whitelist, as
pyperf does for its workers), then every caliber setting is set explicitly, then the
cell's own caches, then the cell's switch env. Anything else in the parent --
a stray DISABLE_MMA_V3, a FLAGTREE_* tracing switch, an inherited
TRITON_CACHE_DIR or FLAGGEMS_CACHE_DIR -- never reaches a cell, so it cannot
change what a cell measures without appearing in its task file.
"""
from __future__ import annotations

from typing import Mapping

from campaign.contract.cellenv_rules import PINNED
from campaign.contract.manifest import Manifest
from campaign.contract.plans import CellPlan
from campaign.contract.platforms import gems_vendor, visibility_variables

# Where tools, libraries and the interpreter's own packages are found. Tool paths
# (ptxas, cuobjdump, nvdisasm) select binaries, not behaviour; CUDA_DEVICE_ORDER
# decides what an index in the visibility variable means.
INHERITED = (
    "PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TMPDIR",
    "PYTHONPATH", "LD_LIBRARY_PATH", "VIRTUAL_ENV",
    "CUDA_HOME", "CUDA_PATH", "CUDA_DEVICE_ORDER", "MUSA_HOME", "MUSA_PATH",
    "TRITON_PTXAS_PATH", "TRITON_CUOBJDUMP_PATH", "TRITON_NVDISASM_PATH",
)

# The cell's caches: isolation is the point of them, so no switch may name them.
CACHE_VARIABLES = ("TRITON_CACHE_DIR", "FLAGGEMS_CACHE_DIR")


def pinned_env(manifest: Manifest) -> dict[str, str]:
    """Every setting the caliber depends on, set explicitly on every cell.

    FlagTree (``sources.triton_flavor: flagtree``) adds compile-time switches of its
    own (``FLAGTREE_<VENDOR>_RLC_ENHANCE`` and tracing knobs), but their names and
    defaults vary by branch and vendor and cannot be confirmed offline, so none is
    pinned here: a value invented for an unknown default would itself be a caliber
    change. The flavor is recorded by the manifest (and each cell's run identity),
    and because `cell_env` inherits no FLAGTREE_* variable from the parent, a
    FlagTree switch reaches a cell only through the manifest's switch cells.
    """
    pinned = dict(PINNED)
    vendor = gems_vendor(manifest.device.backend, manifest.device.target)
    if vendor is not None:
        pinned["GEMS_VENDOR"] = vendor
    return pinned


def cell_env(parent_env: Mapping[str, str], plan: CellPlan) -> dict[str, str]:
    """Whitelisted parent variables + the plan's pinned env + fresh caches + the cell env (wins).

    Every backend's visibility variable is inherited: the plan does not name its
    backend, and a variable another backend ignores changes nothing there.
    """
    clash = sorted(set(plan.task.env) & set(CACHE_VARIABLES))
    if clash:
        raise ValueError(f"task {plan.task.id}: the cell env sets {', '.join(clash)}; "
                         "the caches are the runner's, one fresh pair per cell")
    allowed = INHERITED + visibility_variables()
    env = {name: parent_env[name] for name in allowed if name in parent_env}
    env.update(plan.pinned_env)
    env["TRITON_CACHE_DIR"] = plan.triton_cache_dir
    env["FLAGGEMS_CACHE_DIR"] = plan.tuner_cache_dir
    env.update(plan.task.env)
    return env

"""SASS of a cubin: Triton's own nvdisasm, and the run's store of what it wrote.

nvdisasm is a pure function of the cubin's bytes (and the tool), and its start costs about 0.3
CPU-s whatever the cubin (nvdisasm 12.8 on the development machine): in the whole-suite screen it was
about a third of the CPU, and 55 % of its calls disassembled a cubin another cell of the run had
already disassembled (the baseline's and the candidate's, where the switch left a kernel unchanged;
FlagGems' shared copy kernels). `SassStore` keeps each output by the cubin's sha256 in the run's
scratch (``CellPlan.sass_cache_dir``), so a cubin is disassembled once a run; every cell still writes
its own .sass file, byte for byte what its own nvdisasm would have written.
"""
from __future__ import annotations

import contextlib
import fcntl
import os
import subprocess
from pathlib import Path
from typing import Optional

from triton import knobs

from campaign.contract import canonical, toolenv
from campaign.contract.sasstext import sass_code

# Under a second for the demo matmul; a hung tool must not hold the cell until its own timeout.
DISASSEMBLE_TIMEOUT_S = 300


def disassemble(cubin: Path) -> str:
    """The cubin's SASS; the tool is Triton's own (TRITON_NVDISASM_PATH, else the wheel's)."""
    argv = [knobs.nvidia.nvdisasm.path, "-hex", str(cubin)]
    with toolenv.clean(os.environ, keep=("LD_LIBRARY_PATH",)) as env:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=DISASSEMBLE_TIMEOUT_S, env=env,
                              stdin=subprocess.DEVNULL)
    if proc.returncode != 0:
        raise RuntimeError(f"argv {argv} returned {proc.returncode}: {proc.stderr[-2000:]}")
    return sass_code(proc.stdout)


class SassStore:
    """`disassemble`'s output by the cubin, shared by the cells of one run through ``folder``; None:
    every call disassembles. An entry's name is the sha256 of the tool's bytes, the argv's options and
    the cubin's bytes; it is written whole (a temporary file, then a rename) under an exclusive lock of
    its own, so a cell that asks for a cubin another cell is disassembling waits for that one instead
    of repeating it. A store that cannot be written (a full disk) costs only the saving."""

    def __init__(self, folder: Optional[Path]):
        self.folder = folder
        self._tool: Optional[bytes] = None

    def _key(self, cubin: bytes) -> str:
        if self._tool is None:
            self._tool = canonical.sha256_bytes(Path(knobs.nvidia.nvdisasm.path).read_bytes()).encode() + b"-hex\0"
        return canonical.sha256_bytes(self._tool + cubin)

    def sass(self, cubin: Path) -> str:
        if self.folder is None:
            return disassemble(cubin)
        entry = self.folder / self._key(cubin.read_bytes())
        if entry.is_file():
            return entry.read_text(encoding="utf-8")
        with open(f"{entry}.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if entry.is_file():                  # another cell wrote it while this one waited
                return entry.read_text(encoding="utf-8")
            text = disassemble(cubin)
            partial = entry.with_name(f"{entry.name}.{os.getpid()}.partial")
            try:
                partial.write_text(text, encoding="utf-8")
                os.replace(partial, entry)
            except OSError:                      # as campaign.running.bytecode's store: no half file left
                with contextlib.suppress(OSError):
                    partial.unlink()
            return text


def disassembled(store: SassStore, cubin: Path) -> tuple[Optional[str], Optional[str]]:
    """(sass, None) or (None, why): one variant's disassembly, its failure kept as text."""
    try:
        return store.sass(cubin), None
    except Exception as exc:
        return None, f"{type(exc).__name__}: {exc}"

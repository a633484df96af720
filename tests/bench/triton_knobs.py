"""Read the installed libtriton's C++ knob list: every name its cache key reads, for TRITON_CPP.

``triton._C.libtriton.get_cache_invalidating_env_vars()`` returns only the knobs that are set, so
the list is found by setting every name that could be one: each uppercase identifier in the
library's read-only strings (.rodata), with each of its tails that starts a word (the linker stores
a string that ends another only once: 8 of the 32 knobs of 3.6.0 live inside a longer string). The names are
set in child processes, a chunk each (one environment would pass exec's limit), and each child
prints the knobs it sees set. Minutes on two cores, so not a test: tests/contract/test_knob_table.py
holds the result pinned to a triton version and fails when the installed one differs.

    .venv/bin/python tests/bench/triton_knobs.py
"""
from __future__ import annotations

import json
import re
import struct
import subprocess
import sys
from pathlib import Path

import triton

ROOT = Path(__file__).resolve().parents[2]
CHUNK = 10_000
PROBE = ("import json; from triton._C import libtriton; "
         "print(json.dumps(sorted(libtriton.get_cache_invalidating_env_vars())))")


def rodata(library: Path) -> bytes:
    """The .rodata section of a 64-bit little-endian ELF file."""
    data = library.read_bytes()
    shoff, = struct.unpack_from("<Q", data, 0x28)
    entsize, count, names = struct.unpack_from("<HHH", data, 0x3A)

    def header(index: int) -> tuple[int, int, int]:
        name, _, _, _, offset, size = struct.unpack_from("<IIQQQQ", data, shoff + index * entsize)
        return name, offset, size

    _, table, _ = header(names)
    for index in range(count):
        name, offset, size = header(index)
        if data[table + name:data.index(b"\0", table + name)] == b".rodata":
            return data[offset:offset + size]
    raise SystemExit(f"{library}: no .rodata section")


def candidates(strings: bytes) -> list[str]:
    found = set()
    for word in {w.decode() for w in re.findall(rb"[A-Z][A-Za-z0-9_]{2,63}(?=\0)", strings)}:
        found.update(word[i:] for i in range(len(word)) if i == 0 or word[i - 1] == "_" or not word[i - 1].isupper())
    return sorted(name for name in found if "_" in name and re.fullmatch(r"[A-Z][A-Za-z0-9_]+", name))


def probed(names: list[str]) -> set[str]:
    seen: set[str] = set()
    for start in range(0, len(names), CHUNK):
        env = {name: "1" for name in names[start:start + CHUNK]}
        done = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, check=True)
        seen.update(json.loads(done.stdout))
    return seen


def main() -> int:
    library = Path(triton.__file__).parent / "_C" / "libtriton.so"
    names = candidates(rodata(library))
    found = probed(names)
    sys.path.insert(0, str(ROOT / "tests"))
    sys.path.insert(0, str(ROOT / "tests" / "contract"))
    from test_knob_table import PROBED_VERSION, TRITON_CPP
    print(f"triton {triton.__version__}: {len(names):,} candidate names, {len(found)} C++ knobs")
    print("TRITON_CPP = (\n" + "".join(f'    "{name}",\n' for name in sorted(found)) + ")")
    added, gone = sorted(found - set(TRITON_CPP)), sorted(set(TRITON_CPP) - found)
    print(f"against TRITON_CPP (triton {PROBED_VERSION}): new {added or 'none'}, gone {gone or 'none'}")
    return 1 if added or gone else 0


if __name__ == "__main__":
    raise SystemExit(main())

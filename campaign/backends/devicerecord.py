"""A device's full property record, dumped on the card once and read offline, one file per target.

The compile-only backend answers for a device it does not have. What FlagGems reads of it at
import and dispatch (``torch.cuda.get_device_properties``: the name, capability, SM count,
shared memory per block with opt-in, L2 size, ...) decides its configuration: its tuner keeps a
different config set when one field is missing (``shared_memory_per_block_optin`` absent: 216
mm configs kept instead of the card's 162). So the record is never typed by hand: `dump` reads
every public attribute of the card's property object, `write` stores it under
``campaign/backends/devices/<family>-<arch>.json`` with where it came from, and the offline
shim (`campaign.plugins.flaggems_offline`) answers from it alone.

    python -m campaign.backends.devicerecord            # on the card: prints the record
    python -m campaign.backends.devicerecord --write    # ... and stores it for its target
"""
from __future__ import annotations

import argparse
import datetime
import hashlib
import json
import sys
from importlib import resources
from pathlib import Path
from typing import Any

from campaign.contract.platforms import BY_FAMILY, PLATFORMS

SCHEMA_VERSION = 1
FOLDER = "devices"


def file_name(target: str) -> str:
    """"cuda:90" -> "cuda-90.json"."""
    return target.replace(":", "-") + ".json"


def _plain(value: Any) -> Any:
    if isinstance(value, (bool, int, float, str)) or value is None:
        return value
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return str(value)


def dump(device: int = 0) -> dict:
    """The record of the card torch sees as ``device``: every public, non-callable property."""
    import torch

    props = torch.cuda.get_device_properties(device)
    fields = {name: _plain(getattr(props, name)) for name in dir(props)
              if not name.startswith("_") and not callable(getattr(props, name))}
    major, minor = torch.cuda.get_device_capability(device)
    # the card's family: that of the platform whose runtime this torch was built for
    row = next(p for p in PLATFORMS if p.executes and getattr(torch.version, p.runtime_version or "", None))
    family = BY_FAMILY[row.families[0]]
    arch = major * 10 + minor if family.numeric_arch else (fields.get("gcnArchName") or "").split(":")[0]
    return {
        "schema_version": SCHEMA_VERSION,
        "target": f"{family.name}:{arch}",
        "capability": [major, minor],
        "properties": fields,
        "source": {
            "torch": torch.__version__,
            "runtime": torch.version.hip or torch.version.cuda,
            "dumped_utc": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        },
    }


def text_of(record: dict) -> str:
    return json.dumps(record, sort_keys=True, indent=1) + "\n"


def load(target: str) -> dict:
    """The committed record of ``target``; FileNotFoundError names the targets there are."""
    folder = resources.files("campaign.backends").joinpath(FOLDER)
    path = folder.joinpath(file_name(target))
    if not path.is_file():
        known = sorted(p.name.removesuffix(".json").replace("-", ":", 1) for p in folder.iterdir()
                       if p.name.endswith(".json"))
        raise FileNotFoundError(f"no device record for {target} (dumped on a card: "
                                f"python -m campaign.backends.devicerecord --write); known: {', '.join(known) or 'none'}")
    record = json.loads(path.read_text(encoding="utf-8"))
    if record.get("target") != target:
        raise ValueError(f"{path}: its record is of {record.get('target')!r}, not {target}")
    return record


def digest(record: dict) -> str:
    """What a run identity records of the record it answered from."""
    return hashlib.sha256(text_of(record).encode()).hexdigest()


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m campaign.backends.devicerecord", description=__doc__.splitlines()[0])
    parser.add_argument("--device", type=int, default=0)
    parser.add_argument("--write", action="store_true", help="store it under campaign/backends/devices/")
    args = parser.parse_args(argv)
    record = dump(args.device)
    text = text_of(record)
    sys.stdout.write(text)
    if args.write:
        path = Path(__file__).parent / FOLDER / file_name(record["target"])
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        print(f"written: {path}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

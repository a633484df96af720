"""The device and version rules, one for both sides of a cell.

`campaign run` applies them before anything starts (`campaign.running.runchecks`, over
package metadata and the devices the parent enumerates); the worker applies them again
inside the cell (`campaign.worker.preflight`, over the imported modules and the devices
the cell sees). Two copies once disagreed -- a manifest uuid written ``GPU-...`` was
refused by one side and accepted by the other -- so both sides call these, and each only
words the finding its own way. Pure over plain values: discovery is the callers'.
"""
from __future__ import annotations

from typing import Optional

from campaign.contract.manifest import Device
from campaign.contract.platforms import UUID_PREFIXES

DEVICE_FIELDS = ("name", "uuid", "target")


def bare_uuid(text: str) -> str:
    """torch reports bare uuids, a vendor's tools may print them with a prefix (nvidia-smi and
    NVML: "GPU-"; `campaign.contract.platforms.UUID_PREFIXES`); case and the prefix do not count."""
    text = text.strip().lower()
    prefix = next((p.lower() for p in UUID_PREFIXES if text.startswith(p.lower())), "")
    return text[len(prefix):]


def same_uuid(a: Optional[str], b: Optional[str]) -> bool:
    return a is not None and b is not None and bare_uuid(a) == bare_uuid(b)


def device_mismatches(device: Device, name: str, uuid: Optional[str], target: str) -> frozenset[str]:
    """The fields (of `DEVICE_FIELDS`) in which the device seen is not the manifest's.

    A field the manifest leaves out is not compared, except the target, which it always
    names. Names compare without surrounding blanks (tools pad them)."""
    wrong = set()
    if device.name is not None and name.strip() != device.name.strip():
        wrong.add("name")
    if device.uuid is not None and not same_uuid(uuid, device.uuid):
        wrong.add("uuid")
    if target != device.target:
        wrong.add("target")
    return frozenset(wrong)


def version_matches(pin: str, installed: str) -> bool:
    """Equal, or equal in the public version where one side carries no local build label.

    The runner reads package metadata and the worker the imported module, and the two
    can disagree on the label alone: on the GPU host torch's metadata says 2.11.0 while
    ``torch.__version__`` says 2.11.0+cu130. Two different labels never match.
    """
    if pin == installed:
        return True
    if "+" in pin and "+" in installed:
        return False
    return pin.split("+", 1)[0] == installed.split("+", 1)[0]

"""YAML written back: plain data as block YAML (`dump`), and a loaded manifest (`campaign.contract.yamlio.load`)
with its comments kept, a list grown (`extended`: the inventory's emitted suite) or narrowed (`kept`: a shard's
manifest)."""
from __future__ import annotations

import io
from typing import Any, Callable

from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq

from campaign.contract.yamlio import parser


def dump(data: Any, comment: str = "") -> str:
    """Plain data as block YAML (keys in the order given); ``comment`` lines lead it as ``# ...``."""
    yaml = YAML(typ="safe", pure=True)
    yaml.default_flow_style = False
    yaml.sort_base_mapping_type_on_output = False
    yaml.width = 4096                    # one line per value: a wrapped string diffs badly in review
    out = io.StringIO()
    yaml.dump(data, out)
    head = "".join(f"# {line}".rstrip() + "\n" for line in comment.splitlines())
    return head + out.getvalue()


def extended(document: Any, key: str, items: list[dict[str, Any]], lead: list[str]) -> str:
    """``document`` (from `load`) written back with its comments, its ``key`` list grown by ``items`` (one line each)."""
    listed = document.get(key)
    if not isinstance(listed, CommentedSeq):
        listed = document[key] = CommentedSeq()
    listed.fa.set_block_style()          # an empty template list is written `[]`, a flow list
    for item in items:
        listed.append(CommentedMap(item))
        listed[-1].fa.set_flow_style()
    if lead:                             # the comment lines lead the first item added
        listed.yaml_set_comment_before_after_key(len(listed) - len(items), before="\n".join(lead), indent=2)
    return _written(document)


def kept(document: Any, key: str, keep: Callable[[Any], bool], by: str) -> str:
    """``document`` (from `load`) written back with its comments, its ``key`` list narrowed to the items
    whose ``by`` value ``keep`` holds."""
    listed = document[key]
    for index in reversed(range(len(listed))):
        if not keep(listed[index].get(by)):
            del listed[index]
    return _written(document)


def _written(document: Any) -> str:
    """A round-trip document as text, one line per list item's mapping, comments kept."""
    yaml = parser()
    yaml.width, yaml.map_indent, yaml.sequence_indent, yaml.sequence_dash_offset = 4096, 2, 4, 2
    out = io.StringIO()
    yaml.dump(document, out)
    return out.getvalue()

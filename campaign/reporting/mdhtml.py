"""The markdown the report writes, as HTML: headings, tables, bullet lists, block quotes,
paragraphs, code spans, bold and links -- the constructs `campaign.reporting.report` emits and
nothing more, so the page shows the same words as the markdown report, never a second wording.
"""
from __future__ import annotations

import re
from html import escape

_CODE = re.compile(r"`([^`]*)`")
_BOLD = re.compile(r"\*\*(.+?)\*\*")
_LINK = re.compile(r"\[([^\]]+)\]\(([^)\s]+)\)")


def inline(text: str) -> str:
    """Code spans first (their content stays literal), then bold and links over the escaped rest."""
    parts = _CODE.split(text)
    out = []
    for i, part in enumerate(parts):
        if i % 2:
            out.append(f"<code>{escape(part)}</code>")
            continue
        part = _BOLD.sub(r"<b>\1</b>", escape(part, quote=False))
        out.append(_LINK.sub(lambda m: f'<a href="{escape(m.group(2))}">{m.group(1)}</a>', part))
    return "".join(out)


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split(" | ")]


def _table(lines: list[str]) -> list[str]:
    head, body = _cells(lines[0]), [_cells(line) for line in lines[2:]]
    out = ["<table class=md><thead><tr>" + "".join(f"<th>{inline(c)}" for c in head) + "</thead><tbody>"]
    out += ["<tr>" + "".join(f"<td>{inline(c)}" for c in row) for row in body]
    return out + ["</tbody></table>"]


def heading_id(text: str) -> str:
    return "h-" + re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def to_html(markdown: str) -> str:  # noqa: C901 (one branch per block construct)
    out: list[str] = []
    lines = markdown.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if not line.strip():
            i += 1
        elif line.startswith("#"):
            level = len(line) - len(line.lstrip("#"))
            text = line[level:].strip()
            out.append(f'<h{level} id="{heading_id(text)}">{inline(text)}</h{level}>')
            i += 1
        elif line.startswith("|"):
            block = []
            while i < len(lines) and lines[i].startswith("|"):
                block.append(lines[i])
                i += 1
            out += _table(block)
        elif line.startswith(("- ", "> ")):
            marker = line[:2]
            block = []
            while i < len(lines) and (lines[i].startswith(marker) or (marker == "> " and lines[i] == ">")):
                block.append(lines[i][2:])
                i += 1
            if marker == "- ":
                out += ["<ul>"] + [f"<li>{inline(item)}" for item in block] + ["</ul>"]
            else:
                out.append("<blockquote>" + "<br>".join(inline(item) for item in block) + "</blockquote>")
        else:
            block = []
            while i < len(lines) and lines[i].strip() and not lines[i].startswith(("#", "|", "- ", "> ")):
                block.append(lines[i])
                i += 1
            out.append(f"<p>{inline(' '.join(block))}</p>")
    return "\n".join(out)

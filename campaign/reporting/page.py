"""The review page `campaign report ROOT --html DIR` writes: one self-contained static file,
index.html, with its CSS and script inline and nothing fetched (no network, no CDN).

It shows the markdown report's own words (`campaign.reporting.mdhtml` over
`campaign.reporting.report.markdown`: caliber, classes, the verdict table, each workload's reason
and evidence), the forest plot drawn as inline SVG (`campaign.reporting.forestsvg`) and the IR diff
of every changed workload (`campaign.reporting.diffhtml`), each workload linked from its evidence.
The script switches a diff's stage (its buttons; ``#stage=ptx`` in the address opens every diff at
that stage) and records any error into the page (``body[data-status]``
becomes ``ok`` or ``error``, ``#errors`` holds the messages), so a headless browser can check it.
"""
from __future__ import annotations

from html import escape

from campaign.contract.records import Verdicts
from campaign.judging.irdiffroot import WorkloadDiff
from campaign.reporting import diffhtml, forestsvg, mdhtml, report

PAGE_FILE = "index.html"

CSS = """
body{font:14px/1.45 system-ui,sans-serif;margin:0 auto;max-width:1400px;padding:0 16px 48px;color:#111}
h1{font-size:22px}h2{border-bottom:1px solid #ccc;padding-bottom:2px;margin-top:32px}
code,pre,table.diff{font:12px/1.35 ui-monospace,Menlo,Consolas,monospace}
table.md,table.counts{border-collapse:collapse;margin:8px 0}
table.md td,table.md th,table.counts td,table.counts th{border:1px solid #ccc;padding:2px 6px;text-align:left;vertical-align:top}
table.md th,table.counts th{background:#f2f2f2}
tr.moved td{background:#fff3c4;font-weight:600}
blockquote{border-left:4px solid #c33;margin:8px 0;padding:4px 12px;background:#fdf2f2}
table.diff{border-collapse:collapse;width:100%;table-layout:fixed;margin:4px 0 12px}
table.diff col.n{width:44px}
table.diff td{white-space:pre-wrap;word-break:break-all;padding:0 4px;vertical-align:top}
table.diff td:nth-child(odd){color:#888;text-align:right;user-select:none}
tr.r td:nth-child(2),tr.d td:nth-child(2){background:#ffe5e5}
tr.r td:nth-child(4),tr.i td:nth-child(4){background:#e3f7e3}
tr.s td{background:#eef;color:#557;text-align:center}
p.switch button{font:inherit;margin-right:4px;padding:1px 10px;border:1px solid #888;background:#fff;cursor:pointer}
p.switch button.on{background:#234;color:#fff}
section.diff{border-top:2px solid #234;margin-top:24px}
details.pair{margin:10px 0;border:1px solid #ddd;padding:4px 8px}
div.configs{display:flex;gap:16px}div.configs>div{flex:1;min-width:0}div.configs pre{white-space:pre-wrap;background:#f7f7f7;padding:6px}
svg.forest text{font:11px system-ui,sans-serif}
#errors:empty{display:none}#errors{color:#b00;white-space:pre-wrap}
"""

# Errors go into the page first, so the check in a headless browser sees any that follow.
SCRIPT_HEAD = """window.onerror=function(m,s,l){document.body.dataset.status='error';
var e=document.getElementById('errors');e.textContent+=m+' (line '+l+')\\n';};"""

SCRIPT = r"""
function showStage(sec,stage){
  sec.querySelectorAll('[data-stage]').forEach(function(t){t.hidden=t.dataset.stage!==stage;});
  sec.querySelectorAll('button[data-show]').forEach(function(b){b.classList.toggle('on',b.dataset.show===stage);});
  sec.dataset.shown=stage;
}
var asked=(location.hash.match(/stage=(\w+)/)||[])[1];
document.querySelectorAll('section.diff[data-judged]').forEach(function(sec){
  sec.querySelectorAll('button[data-show]').forEach(function(b){
    b.addEventListener('click',function(){showStage(sec,b.dataset.show);});
  });
  var has=asked&&sec.querySelector('button[data-show="'+asked+'"]');
  showStage(sec,has?asked:sec.dataset.judged);
});
window.addEventListener('load',function(){
  void document.body.offsetHeight;
  document.body.dataset.loadMs=Math.round(performance.now());
  if(document.body.dataset.status!=='error'){document.body.dataset.status='ok';}
});
"""


def diffs_section(verdicts: Verdicts, diffs: dict[str, WorkloadDiff]) -> list[str]:
    changed = [name for name, w in verdicts.workloads.items() if w.ir.changed is True]
    names = list(dict.fromkeys(list(diffs) + changed))
    out = ['<h2 id="ir-diffs">IR diffs</h2>']
    if not names:
        return out + ["<p>No workload's IR changed: nothing to diff.</p>"]
    out.append("<p>Each changed workload's kernel variants, paired as the IR rule pairs them (kernel and signature), "
               "diffed at the judged stage after the normalisation fingerprints use (locations and the switch's "
               "annotations stripped); the other captured stages are one click away. Counts that moved are "
               "highlighted.</p>")
    out += [diffhtml.section(diffs[n]) if n in diffs else diffhtml.missing_section(n) for n in names]
    return out


def html(verdicts: Verdicts, markdown_text: str, diffs: dict[str, WorkloadDiff], banner: str = "") -> str:
    """The page. ``markdown_text``: the report as `report.markdown` wrote it with ``page=""`` (links to
    this page's anchors); ``banner``: the sealed/not-sealed note the markdown report starts with."""
    verdicts = Verdicts.read(verdicts)
    body = mdhtml.to_html(banner + markdown_text)
    plot = ['<h2 id="forest-plot">Forest plot</h2>',
            forestsvg.svg(report.forest_points(verdicts), f"{verdicts.campaign}: {verdicts.switch} on {verdicts.backend}")]
    anchor = f'<h2 id="{mdhtml.heading_id("Workloads")}">'
    body = body.replace(anchor, "\n".join(plot) + "\n" + anchor, 1) if anchor in body else body + "\n".join(plot)
    title = f"{verdicts.campaign}: {verdicts.switch} on {verdicts.backend}"
    return "\n".join([
        "<!doctype html>", '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width,initial-scale=1">',
        f"<title>{escape(title)}</title><style>{CSS}</style></head>",
        '<body data-status="loading">', f"<script>{SCRIPT_HEAD}</script>", '<pre id="errors"></pre>',
        body, *diffs_section(verdicts, diffs), f"<script>{SCRIPT}</script>", "</body></html>", ""])

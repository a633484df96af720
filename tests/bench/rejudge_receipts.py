"""Re-judge every committed root (receipts/*/root.tar.gz) with the classifier of this checkout and
print each root's classes now and those that moved from the sealed ones; with --reasons, under each
root the reason of every workload whose class moved from the sealed one.

    .venv/bin/python tests/bench/rejudge_receipts.py [--reasons]
"""
import json
import pathlib
import sys
import tarfile
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
RECEIPTS = ROOT / "receipts"

from campaign.judging.classify import classify_root  # noqa: E402

for tgz in sorted(RECEIPTS.glob('*/root.tar.gz')):
    with tempfile.TemporaryDirectory() as d:
        with tarfile.open(tgz) as t: t.extractall(d)
        root = next(pathlib.Path(d).iterdir())
        sealed = json.loads((root / 'receipt.json').read_text()).get('verdicts') or {}
        try:
            now = classify_root(root)
        except Exception as e:
            print(tgz.parent.name, 'ERROR', type(e).__name__, str(e)[:100]); continue
        s = {k: v['class'] for k, v in (sealed.get('workloads') or {}).items()}
        n = {k: v['class'] for k, v in now['workloads'].items()}
        moved = {k: f"{s.get(k)}->{n[k]}" for k in n if s.get(k) != n[k]}
        print(tgz.parent.name, ''.join(n[k] for k in sorted(n)), 'moved:', moved or 'none', flush=True)
        if '--reasons' in sys.argv[1:]:
            for k in moved:
                print(f"    {k}: {now['workloads'][k]['reason']}", flush=True)

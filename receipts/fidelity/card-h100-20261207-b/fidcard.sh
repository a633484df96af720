# the card side of the fidelity pair (manifests/h200-fidelity-screen.yaml, 57 items), this tree: its IR pass
# to the end, the out-of-memory cells' alone retries included, then stopped before any timed round and exported
set -u
D=$1
GPU=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
mkdir -p /tmp/keep/runs
[ -d /tmp/keep/tree ] && { cd /tmp/keep/tree; export PYTHONPATH=/tmp/site:/tmp/keep/tree; }
if [ ! -f /tmp/keep/gfid.done ]; then
  if [ ! -f /tmp/keep/gfid.pid ]; then
    sed -e "s/^  name: NVIDIA H200$/  name: $GPU/" -e "s/^  ir_pass_lanes: 14$/  ir_pass_lanes: ${CARD_LANES:-12}/" manifests/h200-fidelity-screen.yaml > manifests/_card-fidelity.yaml
    grep -n "  name: \|ir_pass_lanes" manifests/_card-fidelity.yaml
    nvidia-smi --query-gpu=name,uuid,memory.total,clocks.max.sm,power.limit --format=csv > /tmp/keep/fid-nvidia-smi.txt
    setsid nohup campaign screen manifests/_card-fidelity.yaml --runs-dir /tmp/keep/runs > /tmp/keep/gfid.log 2>&1 < /dev/null &
    echo $! > /tmp/keep/gfid.pid
  fi
  P=$(cat /tmp/keep/gfid.pid)
  # the IR pass is over when a timed round's first cell starts (rounds after it run only where the IR changed)
  while kill -0 $P 2>/dev/null && [ $(( $(date +%s) - T0 )) -lt $((D - ${EXPORT_S:-60})) ]; do
    grep -q "\] start [^ ]*/r1/" /tmp/keep/gfid.log && break
    sleep 10; [ $(( ($(date +%s) - T0) % 60 )) -lt 10 ] && echo "t=$(( $(date +%s) - T0 )) s: card ir-pass cells ended $(grep "\] end " /tmp/keep/gfid.log | grep -c "/r0/")"
  done
  echo "card ir-pass ends: $(grep "\] end " /tmp/keep/gfid.log | grep -c "/r0/") at t=$(( $(date +%s) - T0 )) s"
  if grep -q "\] start [^ ]*/r1/" /tmp/keep/gfid.log || ! kill -0 $P 2>/dev/null || [ "${FINAL:-}" = 1 ]; then
    if kill -0 $P 2>/dev/null; then kill -INT -- -$P; sleep 15; kill -0 $P 2>/dev/null && kill -KILL -- -$P; fi
    G=$(ls -d /tmp/keep/runs/*fidelity-screen-screen-* | head -1); echo "card root $G"; echo $G > /tmp/keep/gfid.root
    python3 tests/bench/fidelity.py export $G --out /tmp/keep/gpu-prints.json && gzip -f /tmp/keep/gpu-prints.json
    (cd $G && awk -F'\t' 'NR>1 && $6!="ok"{print $1}' status.tsv | sort -u | while read c; do ls cells/$c*/stdout.log cells/$c*/stderr.log cells/$c*/run.log 2>/dev/null; done | tar czf $OUT/card-failed-cells.tar.gz -T - ; cp status.tsv /tmp/keep/gfid-status.tsv; cp manifest.yaml /tmp/keep/gfid-manifest.yaml)
    awk -F'\t' 'NR>1{print $6}' /tmp/keep/gfid-status.tsv | sort | uniq -c
    touch /tmp/keep/gfid.done
  fi
  cp /tmp/keep/gfid.log /tmp/keep/fid-nvidia-smi.txt $OUT/; cp /tmp/keep/gpu-prints.json.gz /tmp/keep/gfid-status.tsv /tmp/keep/gfid-manifest.yaml $OUT/ 2>/dev/null
fi
true

# the fidelity pair on one host, this tree: the card side (IR pass of the 57 items, then stopped), then the
# offline side on the host's cores (runs to its seal: cpu times nothing), then compare
set -u
D=$1
GPU=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
mkdir -p /tmp/keep/runs
if [ ! -f /tmp/keep/gfid.done ]; then
  if [ ! -f /tmp/keep/gfid.pid ]; then
    sed -e "s/^  name: NVIDIA H200$/  name: $GPU/" -e "s/^  ir_pass_lanes: 14$/  ir_pass_lanes: ${CARD_LANES:-12}/" manifests/h200-fidelity-screen.yaml > manifests/_card-fidelity.yaml
    grep -n "  name: \|ir_pass_lanes" manifests/_card-fidelity.yaml
    setsid nohup campaign screen manifests/_card-fidelity.yaml --runs-dir /tmp/keep/runs > /tmp/keep/gfid.log 2>&1 < /dev/null &
    echo $! > /tmp/keep/gfid.pid
  fi
  P=$(cat /tmp/keep/gfid.pid); N0=0
  while kill -0 $P 2>/dev/null && [ $(( $(date +%s) - T0 )) -lt $((D - ${EXPORT_S:-60})) ]; do
    N0=$(grep "\] end " /tmp/keep/gfid.log | grep -c "/r0/"); [ $N0 -ge 114 ] && break
    sleep 10; [ $(( ($(date +%s) - T0) % 60 )) -lt 10 ] && echo "t=$(( $(date +%s) - T0 )) s: card ir-pass cells ended $N0"
  done
  N0=$(grep "\] end " /tmp/keep/gfid.log | grep -c "/r0/"); echo "card ir-pass cells ended: $N0 at t=$(( $(date +%s) - T0 )) s"
  if [ $N0 -ge 114 ] || ! kill -0 $P 2>/dev/null || [ "${FINAL:-}" = 1 ]; then
    if kill -0 $P 2>/dev/null; then kill -INT -- -$P; sleep 15; kill -0 $P 2>/dev/null && kill -KILL -- -$P; fi
    G=$(ls -d /tmp/keep/runs/*fidelity-screen-screen-* | head -1); echo "card root $G"; echo $G > /tmp/keep/gfid.root
    python3 tests/bench/fidelity.py export $G --out /tmp/keep/gpu-prints.json && gzip -f /tmp/keep/gpu-prints.json
    (cd $G && awk -F'\t' '$6=="tests_failed"||$6=="timed_out"{print $1}' status.tsv | while read c; do ls cells/$c/stdout.log cells/$c/stderr.log cells/$c/run.log 2>/dev/null; done | tar czf $OUT/card-failed-cells.tar.gz -T - ; cp status.tsv /tmp/keep/gfid-status.tsv; cp manifest.yaml /tmp/keep/gfid-manifest.yaml)
    awk -F'\t' 'NR>1{print $6}' /tmp/keep/gfid-status.tsv | sort | uniq -c
    touch /tmp/keep/gfid.done
  fi
  cp /tmp/keep/gfid.log $OUT/gfid.log; cp /tmp/keep/gpu-prints.json.gz /tmp/keep/gfid-status.tsv /tmp/keep/gfid-manifest.yaml $OUT/ 2>/dev/null
fi
if [ "${SKIP_CPU:-}" != 1 ] && [ -f /tmp/keep/gfid.done ] && [ ! -f /tmp/keep/cfid.done ] && [ $(( $(date +%s) - T0 )) -lt $((D - 120)) ]; then
  if [ ! -f /tmp/keep/cfid.pid ]; then
    setsid nohup /usr/bin/time -v -o /tmp/keep/cfid.time campaign screen manifests/cpu-fidelity-screen.yaml --runs-dir /tmp/keep/runs > /tmp/keep/cfid.log 2>&1 < /dev/null &
    echo $! > /tmp/keep/cfid.pid
  fi
  bash .devrun/watch.sh $(cat /tmp/keep/cfid.pid) /tmp/keep/cfid.log $((D - 30))
  if ! kill -0 $(cat /tmp/keep/cfid.pid) 2>/dev/null; then
    C=$(ls -d /tmp/keep/runs/cpu-fidelity-screen-screen-* | head -1); echo "cpu root $C"; tail -3 /tmp/keep/cfid.log
    campaign verify $C > /tmp/keep/cfid-verify.txt 2>&1; echo "verify rc=$?"
    python3 tests/bench/fidelity.py export $C --out /tmp/keep/cpu-prints.json && gzip -f /tmp/keep/cpu-prints.json
    python3 tests/bench/fidelity.py compare <(zcat /tmp/keep/gpu-prints.json.gz) <(zcat /tmp/keep/cpu-prints.json.gz) \
      --gpu-status /tmp/keep/gfid-status.tsv --cpu-status $C/status.tsv --cpu-screen $C/screen.tsv \
      --out /tmp/keep/fidelity.json --md /tmp/keep/fidelity.md; head -3 /tmp/keep/fidelity.md
    mkdir -p /tmp/keep/cfidtop; find $C -maxdepth 1 -type f -exec cp {} /tmp/keep/cfidtop/ \;
    (cd /tmp/keep && tar czf $OUT/cfid-top.tar.gz cfidtop cfid.log cfid.time cfid-verify.txt)
    cp /tmp/keep/cpu-prints.json.gz /tmp/keep/fidelity.json /tmp/keep/fidelity.md $OUT/
    touch /tmp/keep/cfid.done
  fi
  cp /tmp/keep/cfid.log $OUT/cfid.log
fi

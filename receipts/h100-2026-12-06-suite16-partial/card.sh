# on an H200: #37's GPU tests (and the worker's cell capture), then the card side of the fidelity pair
set -u
D=$1
if [ "${TESTS_ONLY:-}" != 1 ]; then
if [ ! -f /tmp/keep/fid.pid ]; then
  mkdir -p /tmp/keep/runs
  setsid nohup campaign screen manifests/h200-fidelity-screen.yaml --runs-dir /tmp/keep/runs > /tmp/keep/fid.log 2>&1 < /dev/null &
  echo $! > /tmp/keep/fid.pid
fi
P=$(cat /tmp/keep/fid.pid); N0=0
# the fidelity pair needs the IR pass (114 cells: 57 items x 2 sides); round 1's timing is not what it measures
while kill -0 $P 2>/dev/null && [ $(( $(date +%s) - T0 )) -lt $D ]; do
  N0=$(grep "\] end " /tmp/keep/fid.log | grep -c "/r0/"); [ $N0 -ge 114 ] && break
  sleep 15; echo "t=$(( $(date +%s) - T0 )) s: ir-pass cells ended $N0"
done
if kill -0 $P 2>/dev/null; then echo "stopping the screen at $N0 IR-pass cells (114 = the IR pass; round 1 timing is not measured here)"; kill -INT -- -$P; sleep 20; kill -0 $P 2>/dev/null && kill -KILL -- -$P; fi
G=$(ls -d /tmp/keep/runs/h200-fidelity-screen-screen-* | head -1); echo "root $G"
N0=$(grep "\] end " /tmp/keep/fid.log | grep -c "/r0/"); echo "ir-pass cells ended: $N0"
python3 tests/bench/fidelity.py export $G --out /tmp/keep/gpu-prints.json && gzip -f /tmp/keep/gpu-prints.json && cp /tmp/keep/gpu-prints.json.gz $OUT/
cp /tmp/keep/fid.log $OUT/fid.log
(cd $G && awk -F'\t' '$6=="tests_failed"{print $1}' status.tsv | while read c; do ls cells/$c/stdout.log cells/$c/stderr.log cells/$c/outcomes.json 2>/dev/null; done | tar czf $OUT/failed-cells.tar.gz -T - ; cp status.tsv $OUT/fid-status.tsv)
if ! kill -0 $(cat /tmp/keep/fid.pid) 2>/dev/null; then
  date -u > /tmp/keep/fid.done; tail -4 /tmp/keep/fid.log
  campaign verify $G > /tmp/keep/fid-verify.txt 2>&1; echo "verify rc=$?"
  campaign cost $G > /tmp/keep/fid-cost.md 2>&1
  mkdir -p /tmp/keep/fidtop; find $G -maxdepth 1 -type f -exec cp {} /tmp/keep/fidtop/ \;
  (cd /tmp/keep && tar czf $OUT/fid-top.tar.gz fidtop fid.log fid-verify.txt fid-cost.md)
fi
fi
if [ ! -f /tmp/keep/tests.done ]; then
  T1=$(date +%s); mkdir -p /tmp/keep/gpu-out
  CAMPAIGN_GPU_OUT=/tmp/keep/gpu-out timeout ${TEST_TIMEOUT:-330} python3 -m pytest tests/gpu/test_readme_walkthrough_gpu.py tests/gpu/test_per_side_gpu.py tests/gpu/test_cell_capture_gpu.py tests/gpu/test_sass_gpu.py \
     -m gpu -q -p no:cacheprovider --durations=0 > /tmp/keep/gpu-tests.log 2>&1; echo "gpu tests rc=$? in $(( $(date +%s) - T1 )) s"
  grep -E "passed|failed|^FAILED|^ERROR" /tmp/keep/gpu-tests.log | tail -8
  nvidia-smi --query-gpu=name,uuid,driver_version,clocks.max.sm --format=csv > /tmp/keep/nvidia-smi.txt
  (cd /tmp/keep && tar czf $OUT/gpu-tests.tar.gz gpu-tests.log gpu-out nvidia-smi.txt)
  touch /tmp/keep/tests.done
fi
[ "${TESTS_ONLY:-}" = 1 ] && exit 0

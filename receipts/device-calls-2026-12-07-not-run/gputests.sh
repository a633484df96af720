# GPU tests of this tree's changes on the card: the batch's device-memory release (tunerstore), the seeds plugin's
# effect on a card cell's run (cell capture)
set -u
if [ ! -f /tmp/keep/tests.done ]; then
  T1=$(date +%s); mkdir -p /tmp/keep/gpu-out
  CAMPAIGN_GPU_OUT=/tmp/keep/gpu-out timeout ${TEST_TIMEOUT:-300} python3 -m pytest ${GPU_TESTS:-tests/gpu/test_tunerstore_gpu.py} \
     -m gpu -q -p no:cacheprovider --durations=0 > /tmp/keep/gpu-tests.log 2>&1; echo "gpu tests rc=$? in $(( $(date +%s) - T1 )) s"
  grep -E "passed|failed|^FAILED|^ERROR" /tmp/keep/gpu-tests.log | tail -8
  nvidia-smi --query-gpu=name,uuid,driver_version,clocks.max.sm --format=csv > /tmp/keep/nvidia-smi.txt
  (cd /tmp/keep && tar czf $OUT/gpu-tests.tar.gz gpu-tests.log gpu-out nvidia-smi.txt)
  touch /tmp/keep/tests.done
fi

# the README's gpu-test command, alone on the card, in the background so it may outlive one call; polls until the deadline
set -u
D=$1
if [ ! -d /tmp/keep/tree ]; then
  mkdir -p /tmp/keep && cp -a "$PWD" /tmp/keep/tree
  (cd /tmp/keep/tree && PYTHONPATH=/tmp/site:/tmp/keep/tree python3 -m pip install -q --no-index --no-deps --no-build-isolation -e . 2>&1 | tail -2)
fi
cd /tmp/keep/tree; export PYTHONPATH=/tmp/site:/tmp/keep/tree
if [ ! -f /tmp/keep/gputests.started ]; then
  nvidia-smi --query-gpu=name,uuid,clocks.sm,clocks.max.sm,power.draw,power.limit,temperature.gpu --format=csv > /tmp/keep/nvidia-smi.txt
  touch /tmp/keep/gputests.started; date -u +%FT%TZ > /tmp/keep/gputests.t0
  setsid nohup bash -c "python3 -m pytest tests/gpu tests/worker/test_worker.py tests/planning/test_correctness_narrowing.py -m gpu -q -p no:cacheprovider -rA --durations=0 > /tmp/keep/gpu-tests.log 2>&1; echo rc=\$? > /tmp/keep/gputests.rc; date -u +%FT%TZ >> /tmp/keep/gputests.rc" < /dev/null > /dev/null 2>&1 &
fi
while [ ! -f /tmp/keep/gputests.rc ] && [ $(( $(date +%s) - T0 )) -lt $D ]; do
  sleep 15
  [ $(( ($(date +%s) - T0) % 60 )) -lt 15 ] && echo "t=$(( $(date +%s) - T0 )) s: $(tail -c 300 /tmp/keep/gpu-tests.log | tr -d '\n' | tail -c 120)"
done
cp /tmp/keep/nvidia-smi.txt /tmp/keep/gputests.t0 $OUT/; cp /tmp/keep/gpu-tests.log $OUT/ 2>/dev/null
[ -f /tmp/keep/gputests.rc ] && { cat /tmp/keep/gputests.rc; cp /tmp/keep/gputests.rc $OUT/; grep -E "passed|failed|^FAILED|^ERROR" /tmp/keep/gpu-tests.log | tail -12; } || echo "gpu tests still running"
true

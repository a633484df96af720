#!/usr/bin/env bash
# usage: .snap/s6.sh "<manifests>" "<gpu test paths>" [test timeout s]   (session 6: campaigns, then GPU tests)
set -u
T0=$(date +%s)
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl 2>&1 | tail -2
export PYTHONPATH=/tmp/site:$PWD
python3 -m pip install -q --no-index --no-deps --no-build-isolation -e . 2>&1 | tail -2
export PATH=$HOME/.local/bin:$PATH
nvidia-smi --query-gpu=name,uuid,clocks.sm,clocks.max.sm,power.draw,power.limit,temperature.gpu --format=csv | tee $OUT/nvidia-smi.txt
echo "setup $(( $(date +%s) - T0 )) s"
{ echo "pytest11 entry points here:"; python3 -c "import importlib.metadata as m; print(sorted(f'{e.name} ({e.dist.name if e.dist else \"?\"})' for e in m.entry_points(group='pytest11')))"
  for A in "" 1 "" 1 "" 1; do /usr/bin/time -f "autoload-off=[$A] %U user %S sys %e wall" env PYTEST_DISABLE_PLUGIN_AUTOLOAD=$A python3 -c "import pytest; pytest.main(['--co', '-q', '-p', 'no:cacheprovider', 'tests/backends/test_backends.py'])" > /dev/null; done; } > $OUT/plugins.txt 2>&1
tail -7 $OUT/plugins.txt
for M in $1; do
  name=$(basename $M .yaml)
  T1=$(date +%s)
  campaign prepare $M --runs-dir runs > $OUT/$name.log 2>&1 || { echo "prepare $M failed"; tail -5 $OUT/$name.log; continue; }
  ROOT=$(tail -1 $OUT/$name.log)
  campaign run $ROOT >> $OUT/$name.log 2>&1; echo "$name run rc=$? in $(( $(date +%s) - T1 )) s"
  campaign verify $ROOT > $OUT/$name.verify.txt 2>&1; echo "verify rc=$?"
  campaign report $ROOT > $OUT/$name.report.md 2>>$OUT/$name.log; echo "report rc=$?"
  grep -E "^\| (mm|bmm|addmm|add|softmax) " $OUT/$name.report.md | head -8
  tar czf $OUT/$(basename $ROOT).tar.gz -C $(dirname $ROOT) $(basename $ROOT)
done
if [ -n "$2" ]; then
  T1=$(date +%s)
  timeout ${3:-400} python3 -m pytest $2 -m gpu -q -p no:cacheprovider --durations=0 > $OUT/gpu-tests.log 2>&1; echo "gpu tests rc=$? in $(( $(date +%s) - T1 )) s"; grep -E "passed|failed|^FAILED|^ERROR" $OUT/gpu-tests.log | tail -8
fi
echo "total $(( $(date +%s) - T0 )) s"

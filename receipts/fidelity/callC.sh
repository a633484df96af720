#!/usr/bin/env bash
# call C: the whole FlagGems 5.0.2 suite screened offline on this host's 16 cores (no card used), for
# as long as the call allows; its fidelity items' prints, its status, its cost, why each cell failed.
set -u
T0=$(date +%s)
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl 2>&1 | tail -2
export PYTHONPATH=/tmp/site:$PWD
python3 -m pip install -q --no-index --no-deps --no-build-isolation -e . 2>&1 | tail -2
export PATH=$HOME/.local/bin:$PATH
mkdir -p $OUT/logs; nproc > $OUT/logs/host.txt; free -g >> $OUT/logs/host.txt
echo "setup $(( $(date +%s) - T0 )) s"
( while sleep 20; do echo "$(date +%s) $(free -m | awk '/Mem:/{print $3}') MB used, load $(cut -d' ' -f1 /proc/loadavg)"; done ) > $OUT/logs/mem.txt 2>&1 &
T1=$(date +%s)
/usr/bin/time -f "cpu suite screen: %e s wall, %U s user, %S s sys, max RSS %M kB" timeout -s INT ${1:-470} campaign screen manifests/cpu-flaggems-suite-screen.yaml --runs-dir runs > $OUT/logs/screen.log 2>&1; echo "screen rc=$? in $(( $(date +%s) - T1 )) s"; tail -1 $OUT/logs/screen.log
C=$(ls -d runs/cpu-flaggems-suite-screen-screen-* | head -1)
python3 tests/bench/fidelity.py export $C --out $OUT/cpu-prints.json 2>$OUT/logs/export.err; echo "export rc=$? $(wc -c < $OUT/cpu-prints.json) bytes"
cp $C/status.tsv $OUT/status.tsv
campaign cost $C > $OUT/logs/cost.md 2>&1
for d in $C/cells/*/r0/*/; do t=${d#$C/cells/}; rc=$(awk -F'\t' -v id="${t%/}" '$1==id{n=$6} END{print n}' $C/status.tsv); [ "$rc" = "ok" ] && continue; echo "== ${t%/} $rc"; grep -hE "Error|error|FAILED|Exception|offline" $d/run.log $d/stderr.log 2>/dev/null | grep -v "^dobench" | tail -4 | cut -c1-400; done > $OUT/logs/failures.txt
grep -h "host reads" $C/cells/*/r0/*/run.log 2>/dev/null | sort | uniq -c > $OUT/logs/hostreads.txt
for d in $C/cells/*/r0/*/; do n=$(grep -ho "[0-9]* host reads" $d/run.log 2>/dev/null | head -1); [ -n "$n" ] && [ "${n%% *}" != "0" ] && echo "${d#$C/cells/} $n"; done > $OUT/logs/hostreads-cells.txt
awk -F'\t' '$2==0{print $6}' $C/status.tsv | sort | uniq -c
(cd $OUT && tar czf logs.tar.gz logs && rm -rf logs)
echo "total $(( $(date +%s) - T0 )) s"

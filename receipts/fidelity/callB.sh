#!/usr/bin/env bash
# call B: fidelity of the CPU screen. The card's IR pass over 57 FlagGems items, then the same items
# compiled offline on this host's 16 cores (cpu backend), both fingerprinted and compared.
set -u
T0=$(date +%s)
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl 2>&1 | tail -2
export PYTHONPATH=/tmp/site:$PWD
python3 -m pip install -q --no-index --no-deps --no-build-isolation -e . 2>&1 | tail -2
export PATH=$HOME/.local/bin:$PATH
mkdir -p $OUT/logs
nvidia-smi --query-gpu=name,uuid,driver_version --format=csv > $OUT/logs/nvidia-smi.txt; nproc >> $OUT/logs/nvidia-smi.txt
echo "setup $(( $(date +%s) - T0 )) s"
T1=$(date +%s)
timeout -s INT ${1:-240} campaign screen manifests/h200-fidelity-screen.yaml --runs-dir runs > $OUT/logs/gpu-screen.log 2>&1; echo "gpu screen rc=$? in $(( $(date +%s) - T1 )) s"
G=$(ls -d runs/h200-fidelity-screen-screen-* | head -1)
python3 tests/bench/fidelity.py export $G --out $OUT/gpu-prints.json; echo "gpu export rc=$? $(wc -c < $OUT/gpu-prints.json) bytes"
T1=$(date +%s)
/usr/bin/time -f "cpu screen: %e s wall, %U s user, %S s sys" timeout -s INT ${2:-270} campaign screen manifests/cpu-fidelity-screen.yaml --runs-dir runs --emit-manifest $OUT/emitted-h200.yaml > $OUT/logs/cpu-screen.log 2>&1; echo "cpu screen rc=$? in $(( $(date +%s) - T1 )) s"; tail -1 $OUT/logs/cpu-screen.log
C=$(ls -d runs/cpu-fidelity-screen-screen-* | head -1)
python3 tests/bench/fidelity.py export $C --out $OUT/cpu-prints.json; echo "cpu export rc=$? $(wc -c < $OUT/cpu-prints.json) bytes"
python3 tests/bench/fidelity.py compare $OUT/gpu-prints.json $OUT/cpu-prints.json --out $OUT/fidelity.json --md $OUT/fidelity.md 2>/dev/null; head -20 $OUT/fidelity.md
for R in $G $C; do n=$(basename $R); mkdir -p $OUT/logs/$n; cp $R/*.tsv $R/*.yaml $R/*.json $OUT/logs/$n/ 2>/dev/null; campaign cost $R > $OUT/logs/$n/cost.md 2>&1; done
for R in $G $C; do grep -h "flaggems offline" $R/cells/*/r0/baseline/run.log 2>/dev/null | sort | uniq -c | sort -rn | head -5; done
awk -F'\t' 'NR==1{for(i=1;i<=NF;i++) if($i=="verdict") v=i} NR>1{print $v}' $OUT/logs/*/screen.tsv 2>/dev/null | sort | uniq -c
(cd $OUT && tar czf logs.tar.gz logs && rm -rf logs)
echo "total $(( $(date +%s) - T0 )) s"

# the card campaign of the offline screen's changed BLAS items, as shards: shard after shard while the call's deadline lasts
set -u
D=$1
GPU=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
if [ ! -f /tmp/keep/shards.txt ]; then
  TAG=h200; echo "$GPU" | grep -q H200 || TAG=h100
  M=manifests/_card-changed-blas.yaml
  sed -e "s/^  name: NVIDIA H200$/  name: $GPU/" -e "s/^campaign: h200-suite-changed-blas$/campaign: $TAG-suite-changed-blas/" manifests/h200-suite-changed-blas.yaml > $M
  grep -n "^campaign\|  name: " $M
  cp $M /tmp/keep/card-manifest.yaml
  campaign prepare $M --shards ${SHARDS:-2} --runs-dir /tmp/keep/runs > /tmp/keep/prepare.log 2>&1; echo "prepare rc=$?"; grep -E "^shard|REFUSED|rror" /tmp/keep/prepare.log
  grep "^shard " /tmp/keep/prepare.log | sed 's/.*: //' > /tmp/keep/shards.txt; echo 1 > /tmp/keep/shard.next
fi
(cd /tmp/keep && tar czf $OUT/prep.tar.gz prepare.log card-manifest.yaml)
while true; do
  K=$(cat /tmp/keep/shard.next); R=$(sed -n ${K}p /tmp/keep/shards.txt)
  [ -z "$R" ] && { echo "no shard left"; break; }
  [ $(( $(date +%s) - T0 )) -ge $D ] && break
  setsid nohup campaign run $R >> /tmp/keep/camp$K.log 2>&1 < /dev/null &
  P=$!; echo "shard $K: $R (pid $P)"
  bash .devrun/watch.sh $P /tmp/keep/camp$K.log $D
  if kill -0 $P 2>/dev/null; then kill -INT $P; sleep 8; cp /tmp/keep/camp$K.log $OUT/camp$K.log; tail -2 /tmp/keep/camp$K.log; break; fi
  cp /tmp/keep/camp$K.log $OUT/camp$K.log; tail -3 /tmp/keep/camp$K.log
  if grep -q "RUN_INTERRUPTED" <(tail -3 /tmp/keep/camp$K.log); then break; fi
  campaign verify $R > /tmp/keep/camp$K-verify.txt 2>&1; echo "verify rc=$?"
  campaign report $R > /tmp/keep/camp$K-report.md 2>&1; grep -E "^\| " /tmp/keep/camp$K-report.md | head -12
  campaign cost $R > /tmp/keep/camp$K-cost.md 2>&1
  bash .devrun/pack.sh $R $OUT/shard$K.tar.gz /tmp/keep/camp$K-*
  echo $((K+1)) > /tmp/keep/shard.next
done
if [ "$(cat /tmp/keep/shard.next)" -gt 1 ] && [ -z "$(sed -n $(cat /tmp/keep/shard.next)p /tmp/keep/shards.txt)" ]; then
  campaign report $(cat /tmp/keep/shards.txt) > /tmp/keep/both-report.md 2>&1; echo "report both rc=$?"; head -40 /tmp/keep/both-report.md; cp /tmp/keep/both-report.md $OUT/
fi
# whatever shard is open: its root, tarred, so a lost machine loses no sealed cell's evidence
K=$(cat /tmp/keep/shard.next); R=$(sed -n ${K}p /tmp/keep/shards.txt)
[ -n "$R" ] && [ -d "$R" ] && bash .devrun/pack.sh $R $OUT/open-shard$K.tar.gz
true

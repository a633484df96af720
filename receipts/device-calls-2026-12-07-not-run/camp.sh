# the card campaign of the offline screen's changed BLAS items, as shards: one shard per call while budget lasts
set -u
D=$1
GPU=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
if [ ! -f /tmp/keep/shards.txt ]; then
  TAG=h200; echo "$GPU" | grep -q H200 || TAG=h100
  M=manifests/_card-changed-blas.yaml
  sed -e "s/^  name: NVIDIA H200$/  name: $GPU/" -e "s/^campaign: h200-suite-changed-blas$/campaign: $TAG-suite-changed-blas/" manifests/h200-suite-changed-blas.yaml > $M
  grep -n "^campaign\|  name: " $M
  campaign prepare $M --shards ${SHARDS:-2} --runs-dir /tmp/keep/runs > /tmp/keep/prepare.log 2>&1; echo "prepare rc=$?"; grep -E "^shard|REFUSED|rror" /tmp/keep/prepare.log
  grep "^shard " /tmp/keep/prepare.log | sed 's/.*: //' > /tmp/keep/shards.txt; echo 1 > /tmp/keep/shard.next
  cp /tmp/keep/prepare.log $OUT/
fi
K=$(cat /tmp/keep/shard.next); R=$(sed -n ${K}p /tmp/keep/shards.txt)
[ -z "$R" ] && { echo "no shard left"; exit 0; }
if [ ! -f /tmp/keep/camp$K.pid ]; then
  setsid nohup campaign run $R > /tmp/keep/camp$K.log 2>&1 < /dev/null &
  echo $! > /tmp/keep/camp$K.pid; echo "shard $K: $R"
fi
bash .devrun/watch.sh $(cat /tmp/keep/camp$K.pid) /tmp/keep/camp$K.log $D
cp /tmp/keep/camp$K.log $OUT/camp$K.log
if ! kill -0 $(cat /tmp/keep/camp$K.pid) 2>/dev/null; then
  tail -3 /tmp/keep/camp$K.log
  campaign verify $R > /tmp/keep/camp$K-verify.txt 2>&1; echo "verify rc=$?"
  campaign report $R > /tmp/keep/camp$K-report.md 2>&1; grep -E "^\| " /tmp/keep/camp$K-report.md | head -12
  campaign cost $R > /tmp/keep/camp$K-cost.md 2>&1
  (cd $(dirname $R) && tar czf $OUT/shard$K.tar.gz $(basename $R)) ; cp /tmp/keep/camp$K-* $OUT/
  echo $((K+1)) > /tmp/keep/shard.next
fi

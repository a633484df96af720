# the whole-suite offline screen on the host's cores (the card unused) as screen shards: the first call
# freezes the set and screens shard after shard; a call's end stops it (SIGINT) and the next call resumes
# the set: sealed shards are read, the open one finishes, no settled cell runs again
set -u
D=$1
M=${SUITE_MANIFEST:-manifests/cpu-flaggems-suite-screen-weighted.yaml}
C=$(sed -n 's/^campaign: //p' $M)
mkdir -p /tmp/keep/runs
roots() { ls -d /tmp/keep/runs/$C-screen-shard* 2>/dev/null; }
if [ -z "$(roots)" ]; then
  set -- screen $M --shards ${SHARDS:-4} --runs-dir /tmp/keep/runs --emit-manifest /tmp/keep/emitted.yaml
else
  set -- screen --resume $(roots) --emit-manifest /tmp/keep/emitted.yaml
fi
echo "campaign $*"; N=$(ls /tmp/keep/suite*.time 2>/dev/null | wc -l)
setsid nohup /usr/bin/time -v -o /tmp/keep/suite$N.time campaign "$@" >> /tmp/keep/suite.log 2>&1 < /dev/null &
P=$!
bash .devrun/watch.sh $P /tmp/keep/suite.log $(( D - 40 ))
if kill -0 $P 2>/dev/null; then
  kill -INT -- -$P; for i in $(seq 30); do kill -0 $P 2>/dev/null || break; sleep 1; done
  echo "stopped at t=$(( $(date +%s) - T0 )) s"
fi
uptime; tail -4 /tmp/keep/suite.log
for R in $(roots); do
  S=$(basename $R)
  if [ -f $R/receipt.json ] && [ ! -f /tmp/keep/$S.packed ]; then
    campaign verify $R > /tmp/keep/$S-verify.txt 2>&1; echo "$S verify rc=$?"
    campaign cost $R > /tmp/keep/$S-cost.md 2>&1; grep "^| \*\*total" /tmp/keep/$S-cost.md
    python3 tests/bench/fidelity.py export $R --out /tmp/keep/$S-prints.json && gzip -f /tmp/keep/$S-prints.json
    mkdir -p /tmp/keep/top/$S; find $R -maxdepth 1 -type f -exec cp {} /tmp/keep/top/$S/ \;
    touch /tmp/keep/$S.packed
  else
    [ -f $R/status.tsv ] && echo "$S: $(( $(wc -l < $R/status.tsv) - 1 )) status rows, not sealed" || echo "$S: not started"
  fi
done
(cd /tmp/keep && tar czf $OUT/suite-shards.tar.gz top suite.log suite*.time *-verify.txt *-cost.md *-prints.json.gz emitted.yaml 2>/dev/null)
ls -la $OUT

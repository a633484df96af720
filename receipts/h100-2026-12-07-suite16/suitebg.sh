# the whole-suite offline screen on the host's cores (the card unused), run once, uninterrupted, across
# chained calls of one warm machine: the first call starts `campaign screen --shards N` in its own process
# session (setsid: it outlives the call), each call watches it until its deadline and packs the shards
# that sealed; nothing is stopped, so the set's wall is one uninterrupted screen's. A call that finds the
# screen gone with a shard unsealed (the machine's processes ended) resumes the set.
# The screen runs from a copy of the frozen tree under /tmp/keep/tree, outside every path a call sends: a
# later call that does not carry .frozen empties it on the machine (2026-12-07: the running screen lost its
# own package mid-pass and stopped), and one that carries it replaces it.
set -u
# First call: cd .frozen && FORCE_MODE=suitebg bash .devrun/go.sh D (carry .frozen); later calls carry
# nothing and run: cd /tmp/keep/tree && FORCE_MODE=suitebg bash .devrun/go.sh D
if [ ! -d /tmp/keep/tree ]; then
  mkdir -p /tmp/keep && cp -a "$PWD" /tmp/keep/tree
  (cd /tmp/keep/tree && PYTHONPATH=/tmp/site:$PWD python3 -m pip install -q --no-index --no-deps --no-build-isolation -e . 2>&1 | tail -2)
fi
cd /tmp/keep/tree
export PYTHONPATH=/tmp/site:/tmp/keep/tree
D=$1
M=${SUITE_MANIFEST:-manifests/cpu-flaggems-suite-screen-weighted.yaml}
C=$(sed -n 's/^campaign: //p' $M)
mkdir -p /tmp/keep/runs
roots() { ls -d /tmp/keep/runs/$C-screen-shard* 2>/dev/null; }
sealed_all() { for R in $(roots); do [ -f $R/receipt.json ] || return 1; done; [ -n "$(roots)" ]; }
P=$(cat /tmp/keep/screen.pid 2>/dev/null || echo 0)
if [ "$P" != 0 ] && kill -0 $P 2>/dev/null; then
  echo "screen running (pid $P) since $(stat -c %y /tmp/keep/screen.pid)"
elif sealed_all; then
  echo "every shard sealed"; P=0
else
  if [ -z "$(roots)" ]; then
    set -- screen $M --shards ${SHARDS:-2} --runs-dir /tmp/keep/runs --emit-manifest /tmp/keep/emitted.yaml
  else
    set -- screen --resume $(roots) --emit-manifest /tmp/keep/emitted.yaml
  fi
  echo "campaign $*"; N=$(ls /tmp/keep/suite*.time 2>/dev/null | wc -l)
  setsid nohup /usr/bin/time -v -o /tmp/keep/suite$N.time campaign "$@" >> /tmp/keep/suite.log 2>&1 < /dev/null &
  P=$!; echo $P > /tmp/keep/screen.pid
fi
[ "$P" != 0 ] && bash .devrun/watch.sh $P /tmp/keep/suite.log $(( D - 45 ))
uptime; tail -5 /tmp/keep/suite.log
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
cat /tmp/keep/suite*.time 2>/dev/null | grep -E 'Elapsed|User time|System time|Maximum resident' 
(cd /tmp/keep && tar czf $OUT/suite-shards.tar.gz top suite.log suite*.time *-verify.txt *-cost.md *-prints.json.gz emitted.yaml 2>/dev/null)
ls -la $OUT

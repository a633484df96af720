# the 16-core whole-suite screen (no card): started on the first call, watched on the next, collected when sealed
set -u
D=$1
if [ ! -f /tmp/keep/suite.pid ]; then
  mkdir -p /tmp/keep/runs
  setsid nohup /usr/bin/time -v -o /tmp/keep/suite.time campaign screen manifests/cpu-flaggems-suite-screen-weighted.yaml --runs-dir /tmp/keep/runs \
     --emit-manifest /tmp/keep/emitted.yaml > /tmp/keep/suite.log 2>&1 < /dev/null &
  echo $! > /tmp/keep/suite.pid; date -u +%FT%TZ > /tmp/keep/suite.start
fi
bash .devrun/watch.sh $(cat /tmp/keep/suite.pid) /tmp/keep/suite.log $D
R=$(ls -d /tmp/keep/runs/cpu-flaggems-suite-screen*-screen-* | head -1); echo "root $R"
uptime
if ! kill -0 $(cat /tmp/keep/suite.pid) 2>/dev/null; then
  tail -5 /tmp/keep/suite.log
  campaign cost $R > /tmp/keep/cost.md 2>&1; head -30 /tmp/keep/cost.md
  campaign verify $R > /tmp/keep/verify.txt 2>&1; echo "verify rc=$?"
  python3 tests/bench/fidelity.py export $R --out /tmp/keep/cpu-suite-prints.json; gzip -f /tmp/keep/cpu-suite-prints.json
  mkdir -p /tmp/keep/top; find $R -maxdepth 1 -type f -exec cp {} /tmp/keep/top/ \;
  (cd /tmp/keep && tar czf $OUT/suite-top.tar.gz top suite.log suite.time suite.start cost.md verify.txt emitted.yaml 2>/dev/null)
  cp /tmp/keep/cpu-suite-prints.json.gz $OUT/
fi
cp /tmp/keep/suite.log $OUT/suite.log

# usage: watch.sh PID LOG DEADLINE_S : wait for PID or the deadline (from T0), printing progress each minute
P=$1; L=$2; D=$3
while kill -0 $P 2>/dev/null && [ $(( $(date +%s) - T0 )) -lt $D ]; do
  sleep 20
  [ $(( ($(date +%s) - T0) % 60 )) -lt 20 ] && echo "t=$(( $(date +%s) - T0 )) s: $(grep -c ' end ' $L) ended; $(tail -c 200 $L | tail -1)"
done
kill -0 $P 2>/dev/null && echo "still running at t=$(( $(date +%s) - T0 )) s" || echo "finished at t=$(( $(date +%s) - T0 )) s"

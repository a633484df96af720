# the card side of the fidelity pair; then this tree's GPU test of the batch's memory release; then the
# changed-BLAS campaign's shards in what is left (a shard started here runs on between chained calls)
set -u
SKIP_CPU=1 bash .devrun/fid.sh $1
left() { echo $(( $1 - ($(date +%s) - T0) )); }
[ -f /tmp/keep/gfid.done ] && [ $(left $1) -gt 240 ] && TEST_TIMEOUT=$(( $(left $1) - 40 )) bash .devrun/gputests.sh
[ -f /tmp/keep/gfid.done ] && [ $(left $1) -gt 120 ] && bash .devrun/camp.sh $1
true

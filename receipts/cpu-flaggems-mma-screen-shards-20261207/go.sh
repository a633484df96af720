#!/bin/bash
# usage: FORCE_MODE=suiteshards|camp|fid|gputests bash .devrun/go.sh DEADLINE_S
# (default: camp on an H200, the card campaign of the changed items; suiteshards elsewhere)
set -u
T0=$(date +%s); export T0
GPU=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1); echo "gpu: $GPU; cores $(nproc)"
source .devrun/setup.sh; echo "setup $(( $(date +%s) - T0 )) s"
mkdir -p /tmp/keep
if [ -z "${FORCE_MODE:-}" ] && [ ! -f /tmp/keep/mode ]; then
  echo "$GPU" | grep -q H200 && echo camp > /tmp/keep/mode || echo suiteshards > /tmp/keep/mode
fi
MODE=${FORCE_MODE:-$(cat /tmp/keep/mode)}; echo "mode $MODE"
bash .devrun/$MODE.sh $1
echo "total $(( $(date +%s) - T0 )) s"

#!/bin/bash
# usage: FORCE_MODE=fid|camp|suite|gputests bash .devrun/go.sh DEADLINE_S
set -u
T0=$(date +%s); export T0
GPU=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1); echo "gpu: $GPU; cores $(nproc)"
source .devrun/setup.sh; echo "setup $(( $(date +%s) - T0 )) s"
mkdir -p /tmp/keep
MODE=${FORCE_MODE:-fid}; echo "mode $MODE"
bash .devrun/$MODE.sh $1
echo "total $(( $(date +%s) - T0 )) s"

#!/bin/bash
# usage: bash .devrun/go.sh DEADLINE_S  -- H200: #37 GPU tests then the fidelity card screen; else the 16-core suite screen
set -u
T0=$(date +%s); export T0
GPU=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1); echo "gpu: $GPU; cores $(nproc)"
source .devrun/setup.sh; echo "setup $(( $(date +%s) - T0 )) s"
mkdir -p /tmp/keep
if [ -n "${FORCE_MODE:-}" ]; then MODE=$FORCE_MODE; elif [ -f /tmp/keep/mode ]; then MODE=$(cat /tmp/keep/mode); elif echo "$GPU" | grep -q H200; then MODE=card; else MODE=${ELSE_MODE:-suite}; fi
echo $MODE > /tmp/keep/mode; echo "mode $MODE"
bash .devrun/$MODE.sh $1
[ "$MODE" = card ] && [ -f /tmp/keep/fid.done ] && echo camp > /tmp/keep/mode
echo "total $(( $(date +%s) - T0 )) s"

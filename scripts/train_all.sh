#!/usr/bin/env bash
# Re-create every trained checkpoint shipped in tinytf/checkpoints/ (the .safetensors weights and the
# .json sidecars with config, command, seed, steps and metrics). Each run uses one CPU thread and takes
# a few minutes; on the same torch build the result is bit-identical to the shipped files.
#   scripts/train_all.sh            # both checkpoints
#   PYTHON=python3 scripts/train_all.sh
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-.venv/bin/python}"
for task in induction reversal; do
    echo "== $task"
    time "$PY" -m tinytf.train --task "$task" --preset tiny --out tinytf/checkpoints
done

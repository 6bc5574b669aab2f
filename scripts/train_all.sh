#!/usr/bin/env bash
# Re-create every trained checkpoint shipped in tinytf/checkpoints/ (the .safetensors weights and the
# .json sidecars with config, command, seed, steps and metrics). Each run uses one CPU thread; on the
# same torch build the result is bit-identical to the shipped files.
#   scripts/train_all.sh                  # every checkpoint
#   scripts/train_all.sh induction text   # only these tasks
#   PYTHON=python3 scripts/train_all.sh
# Measured on the project's 2-core machine (one thread): induction-2l ~2-10 min, reversal-2l ~1 min,
# text-4l (+ its 4 snapshots text-4l@step*, 1800 steps) 35 min of wall time
# on a busy machine (load average 6-7); on a quiet one 1.28 steps/s, about 24 min. The text model reads its corpus, the docstrings of
# the running Python's standard library, at training time: its weights are reproduced only with the same
# Python version (the sidecar records the corpus sha256).
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-.venv/bin/python}"
tasks=("$@")
[ ${#tasks[@]} -eq 0 ] && tasks=(induction reversal text)
for task in "${tasks[@]}"; do
    echo "== $task"
    case "$task" in
        text) time "$PY" -m tinytf train --task text --preset small --out tinytf/checkpoints ;;
        *) time "$PY" -m tinytf train --task "$task" --preset tiny --out tinytf/checkpoints ;;
    esac
done

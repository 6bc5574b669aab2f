"""The command line of the book's laboratory: ``python -m tinytf <command> [options]``.

    python -m tinytf train --task induction --preset tiny [--out tinytf/checkpoints]   # tinytf.lab.train
    python -m tinytf train --task text --preset small                                 # the English model
    python -m tinytf record-qk-norm                 # re-record chapter 11's QK-norm runs (tinytf.lab.frontier)

``scripts/train_all.sh`` re-creates every shipped checkpoint with these commands.
"""
from __future__ import annotations

import sys

from .lab.frontier import main as record_qk_norm
from .lab.train import main as train

COMMANDS = {"train": "train a model and write its checkpoint (tinytf.lab.train)",
            "record-qk-norm": "re-record tinytf/checkpoints/qk_norm_logits.json (tinytf.lab.frontier)"}


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] not in COMMANDS:
        print(__doc__.strip().splitlines()[0] + "\n\ncommands:")
        for name, what in COMMANDS.items():
            print(f"  {name:<15} {what}")
        return 0 if argv and argv[0] in ("-h", "--help") else 2
    command, rest = argv[0], argv[1:]
    if command == "train":
        return train(rest)
    return record_qk_norm()


if __name__ == "__main__":
    sys.exit(main())

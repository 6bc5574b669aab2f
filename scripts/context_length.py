"""Measure text-4l's bits per byte at every position of 512-byte windows of held-out text, as shipped and with
its RoPE positions rescaled (linear interpolation by 2 and 4, YaRN by 4) and with every layer limited to a
sliding window of 128, 32 or 8 keys, with a progress bar; writes tinytf/checkpoints/text-4l-context.json, which
chapter 11 loads. About 4 minutes on one thread (236 s when last recorded).

    PYTHONPATH=. python scripts/context_length.py [--windows 128] [--seq-len 512]
"""
from tinytf.lab.context_length import main

if __name__ == "__main__":
    raise SystemExit(main())

"""Measure text-4l's bits per byte at every position of 512-byte windows of held-out text, as shipped and with
its RoPE positions rescaled (linear interpolation by 2 and 4, YaRN by 4) and with every layer limited to a
sliding window of 128, 32 or 8 keys, and with every key kept but offsets over 127 scored as 127, with a
progress bar; writes tinytf/checkpoints/text-4l-context.json, which chapter 11 loads. About 5 to 8 minutes
on one thread (459 s when last recorded, on a busy machine).

    PYTHONPATH=. python scripts/context_length.py [--windows 128] [--seq-len 512]
"""
from tinytf.lab.context_length import main

if __name__ == "__main__":
    raise SystemExit(main())

"""Measure text-4l's bits per byte at every position of 512-byte windows of held-out text, as shipped and with
its RoPE positions rescaled (linear interpolation by 2 and 4, YaRN by 4) and with every layer limited to a
sliding window of 128, 32 or 8 keys, and with every key kept but offsets over 127 scored as 127 (in every RoPE
pair, in pairs 6-15 only, in pairs 0-5 only), with a progress bar; writes tinytf/checkpoints/text-4l-context.json,
which chapter 10 loads. About 6 to 10 minutes on one thread (459 s for the first eight conditions, on a busy
machine). --only KEY ... measures only those conditions and merges them into the recorded file (the last merge:
"1", "clamp 128", "clamp 128, pairs 6-15", "clamp 128, pairs 0-5", 394 s; the first two came out identical).

    PYTHONPATH=. python scripts/context_length.py [--windows 128] [--seq-len 512] [--only KEY ...]
"""
from tinytf.lab.context_length import main

if __name__ == "__main__":
    raise SystemExit(main())

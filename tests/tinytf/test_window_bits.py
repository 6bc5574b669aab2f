"""tinytf.lab.window_bits: bits per byte window by window, and paired differences."""
import math

import pytest
import torch

import tinytf
from tinytf.lab import window_bits as wb


def test_per_window_bits_average_to_bits_per_byte():
    torch.manual_seed(0)
    model = tinytf.TinyTransformer(tinytf.TinyConfig(n_layers=1, d_model=32, n_heads=2))
    data = torch.randint(0, 256, (2000,))
    per = wb.bits_per_window(model, data, 6, 64, batch_size=4)
    assert per.shape == (6,)
    assert math.isclose(float(per.mean()), tinytf.bits_per_byte(model, data, 6, 64), rel_tol=1e-6)


def test_paired_difference():
    a, b = torch.tensor([1.0, 2.0, 3.0]), torch.tensor([1.1, 2.1, 3.4])
    d = wb.paired_difference(b, a)
    assert math.isclose(d.mean, 0.2, rel_tol=1e-6) and d.n == 3 and d.sem > 0
    with pytest.raises(tinytf.TinyTFInputError):
        wb.paired_difference(b, a[:2])

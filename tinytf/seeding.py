"""Repeatable randomness: ``seed_everything`` (also ``tinytf.seed_everything``)."""
from __future__ import annotations

import random

import torch


def seed_everything(seed: int = 0):
    """Seed torch and Python's random module so a chapter gives the same numbers on every run."""
    random.seed(seed)
    torch.manual_seed(seed)

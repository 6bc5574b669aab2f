"""Feed-forward networks. Each token goes through the same MLP on its own:
C -> d_ff -> C, no mixing between positions."""
from __future__ import annotations

from torch import nn
import torch.nn.functional as F

from .config import TinyConfig
from .hooks import Hook

ACTIVATIONS = {"relu": nn.ReLU, "gelu": nn.GELU, "gelu_tanh": lambda: nn.GELU(approximate="tanh")}


class MLP(nn.Module):
    """The 2017 two-matrix FFN: down(act(up(x))). Classic d_ff = 4 * d_model."""

    def __init__(self, d_model: int, d_ff: int, activation: str = "relu", bias: bool = True):
        super().__init__()
        self.up = nn.Linear(d_model, d_ff, bias=bias)  # W1: C -> d_ff
        self.act = ACTIVATIONS[activation]()
        self.down = nn.Linear(d_ff, d_model, bias=bias)  # W2: d_ff -> C
        self.hook_pre, self.hook_post, self.hook_out = Hook(), Hook(), Hook()

    def forward(self, x):  # x: [B, T, C]
        pre = self.hook_pre(self.up(x))  # [B, T, d_ff]
        post = self.hook_post(self.act(pre))  # [B, T, d_ff]
        return self.hook_out(self.down(post))  # [B, T, C]


class SwiGLU(nn.Module):
    """The gated FFN of Llama/Qwen: down(silu(gate(x)) * up(x)) (like LlamaMLP)."""

    def __init__(self, d_model: int, d_ff: int, bias: bool = False):
        super().__init__()
        self.gate = nn.Linear(d_model, d_ff, bias=bias)  # W_gate: C -> d_ff
        self.up = nn.Linear(d_model, d_ff, bias=bias)  # W_up:   C -> d_ff
        self.down = nn.Linear(d_ff, d_model, bias=bias)  # W_down: d_ff -> C
        self.hook_gate, self.hook_up, self.hook_act = Hook(), Hook(), Hook()
        self.hook_post, self.hook_out = Hook(), Hook()

    def forward(self, x):  # x: [B, T, C]
        gate = self.hook_gate(self.gate(x))  # [B, T, d_ff]
        act = self.hook_act(F.silu(gate))  # [B, T, d_ff]
        post = self.hook_post(act * self.hook_up(self.up(x)))  # [B, T, d_ff]
        return self.hook_out(self.down(post))  # [B, T, C]


class GeGLU(SwiGLU):
    """Gemma's gated FFN: down(gelu_tanh(gate(x)) * up(x)); the same three matrices as SwiGLU."""

    def forward(self, x):  # x: [B, T, C]
        gate = self.hook_gate(self.gate(x))  # [B, T, d_ff]
        act = self.hook_act(F.gelu(gate, approximate="tanh"))  # [B, T, d_ff]
        post = self.hook_post(act * self.hook_up(self.up(x)))  # [B, T, d_ff]
        return self.hook_out(self.down(post))  # [B, T, C]


GATED = {"swiglu": SwiGLU, "geglu": GeGLU}


def llama_hidden_size(d_model: int, multiplier: float | None = None, multiple_of: int = 256,
                      steps: bool = False):
    """The FFN width ``d_ff`` of Meta's Llama reference code (class ``FeedForward`` in ``llama/model.py``).

    From ``hidden_dim = 4 * d_model``: two thirds, rounded down; times ``multiplier`` (``ffn_dim_multiplier``)
    if given, rounded down; then *up* to a multiple of ``multiple_of``. Returns the width, or with
    ``steps=True`` the list of every step (``[4d, 2/3 of it, (times the multiplier,) rounded up]``).
    Llama 1 7B: ``llama_hidden_size(4096)`` is 11008; Llama 3 8B:
    ``llama_hidden_size(4096, 1.3, 1024)`` is 14336."""
    chain = [4 * d_model]
    chain.append(int(2 * chain[-1] / 3))
    if multiplier is not None:
        chain.append(int(multiplier * chain[-1]))
    chain.append(multiple_of * ((chain[-1] + multiple_of - 1) // multiple_of))
    return chain if steps else chain[-1]


def zero_count_table(hidden: dict) -> str:
    """A text table of exact zeros in FFN hidden tensors, one row per ``label: tensor [T, d_ff]``.

    Columns: how many values are exactly 0 (and their share), and how many of the ``d_ff`` units are 0 at
    every one of the ``T`` positions (silent on this text)."""
    lines = [f"{'hidden tensor [T, d_ff]':25} {'exactly 0 (share)':>17}  units 0 for every token"]
    for label, h in hidden.items():
        n_zero = int((h == 0).sum())  # a count: 0 means no exact zero at all
        silent = int((h == 0).all(dim=0).sum())  # units zero at every position
        zero = f"{n_zero:,} ({n_zero / h.numel():.1%})"
        lines.append(f"{label:25} {zero:>17}  {silent:>6} of {h.shape[-1]}")
    return "\n".join(lines)


def make_dense_ffn(cfg: TinyConfig) -> nn.Module:
    """The dense FFN a config asks for, of width d_ff: gated (SwiGLU, GeGLU) or a two-matrix MLP. (A layer's
    FFN, dense or a mixture of experts, is chosen by ``tinytf.blocks.make_ffn``.)"""
    if cfg.ffn in GATED:
        return GATED[cfg.ffn](cfg.d_model, cfg.d_ff, bias=cfg.bias)
    return MLP(cfg.d_model, cfg.d_ff, activation=cfg.ffn, bias=cfg.bias)

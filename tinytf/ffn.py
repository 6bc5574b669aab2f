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
        act = self.hook_act(F.silu(self.hook_gate(self.gate(x))))  # [B, T, d_ff]
        post = self.hook_post(act * self.hook_up(self.up(x)))  # [B, T, d_ff]
        return self.hook_out(self.down(post))  # [B, T, C]


class GeGLU(SwiGLU):
    """Gemma's gated FFN: down(gelu_tanh(gate(x)) * up(x)); the same three matrices as SwiGLU."""

    def forward(self, x):  # x: [B, T, C]
        act = self.hook_act(F.gelu(self.hook_gate(self.gate(x)), approximate="tanh"))  # [B, T, d_ff]
        post = self.hook_post(act * self.hook_up(self.up(x)))  # [B, T, d_ff]
        return self.hook_out(self.down(post))  # [B, T, C]


GATED = {"swiglu": SwiGLU, "geglu": GeGLU}


def make_dense_ffn(cfg: TinyConfig) -> nn.Module:
    """The dense FFN a config asks for, of width d_ff: gated (SwiGLU, GeGLU) or a two-matrix MLP. (A layer's
    FFN, dense or a mixture of experts, is chosen by ``tinytf.blocks.make_ffn``.)"""
    if cfg.ffn in GATED:
        return GATED[cfg.ffn](cfg.d_model, cfg.d_ff, bias=cfg.bias)
    return MLP(cfg.d_model, cfg.d_ff, activation=cfg.ffn, bias=cfg.bias)

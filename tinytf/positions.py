"""Position information. Attention alone is blind to order, so a model either adds a
position vector to each token embedding (sinusoidal, learned) or rotates queries and
keys by an angle that grows with position (RoPE).

Each model holds one *additive* module (adds P[t] or nothing) and each self-attention
holds one *rotary* module (rotates Q/K or does nothing), chosen at construction."""
from __future__ import annotations

import math

import torch
from torch import nn

from .config import TinyConfig
from .errors import TinyTFInputError
from .hooks import Hook


def sinusoidal_table(n_positions: int, d_model: int) -> torch.Tensor:
    """P[t, 2i] = sin(t / 10000^(2i/d)), P[t, 2i+1] = cos(...). Shape [n_positions, d_model]."""
    t = torch.arange(n_positions, dtype=torch.float32)[:, None]  # [T, 1]
    freq = torch.exp(torch.arange(0, d_model, 2, dtype=torch.float32) * (-math.log(10000.0) / d_model))  # [C/2]
    table = torch.zeros(n_positions, d_model)
    table[:, 0::2] = torch.sin(t * freq)
    table[:, 1::2] = torch.cos(t * freq[: d_model // 2])
    return table


def diagonal_spread(S: torch.Tensor) -> float:
    """How far a square matrix ``S`` [T, T] is from depending only on the offset of its entries:
    the largest (max - min) along any diagonal, divided by (max - min) of all of ``S``.
    0 when every diagonal is constant (a function of m - n alone); about 1 when a diagonal
    varies as much as the whole matrix."""
    if S.dim() != 2 or S.shape[0] != S.shape[1]:
        raise TinyTFInputError(f"diagonal_spread: expected a square [T, T] matrix, got shape {list(S.shape)}")
    T = S.shape[0]
    worst = max((d.max() - d.min()).item() for d in (torch.diagonal(S, k) for k in range(-T + 1, T)))
    whole = (S.max() - S.min()).item()
    if whole == 0:
        raise TinyTFInputError("diagonal_spread: every entry of S is equal; the spread is undefined")
    return worst / whole


class _Additive(nn.Module):
    def __init__(self, max_seq_len: int):
        super().__init__()
        self.max_seq_len = max_seq_len
        self.hook_table = Hook()

    def _check(self, end: int):
        if end > self.max_seq_len:
            raise TinyTFInputError(
                f"sequence needs positions 0 to {end - 1}, but this model's {type(self).__name__} covers only "
                f"max_seq_len={self.max_seq_len} positions (0 to {self.max_seq_len - 1}); shorten the input or raise "
                "max_seq_len"
            )


class SinusoidalPositions(_Additive):
    """Fixed sin/cos vectors added to the token embeddings (Vaswani et al., 2017)."""

    def __init__(self, cfg: TinyConfig):
        super().__init__(cfg.max_seq_len)
        self.register_buffer("table", sinusoidal_table(cfg.max_seq_len, cfg.d_model), persistent=False)

    def forward(self, x, offset: int = 0):  # x: [B, T, C]
        self._check(offset + x.shape[1])
        return x + self.hook_table(self.table[offset : offset + x.shape[1]])  # [T, C] broadcast over B


class LearnedPositions(_Additive):
    """A trainable vector per position (GPT-2, BERT)."""

    def __init__(self, cfg: TinyConfig):
        super().__init__(cfg.max_seq_len)
        self.weight = nn.Parameter(torch.randn(cfg.max_seq_len, cfg.d_model) * 0.02)

    def forward(self, x, offset: int = 0):  # x: [B, T, C]
        self._check(offset + x.shape[1])
        return x + self.hook_table(self.weight[offset : offset + x.shape[1]])  # [T, C] broadcast over B


class NoPositions(nn.Module):
    """Adds nothing (used with RoPE, which acts inside attention, or with pos='none')."""

    def forward(self, x, offset: int = 0):
        return x


def rotate_half(x):
    """[x1, x2] -> [-x2, x1] on the last dimension: the half-split pairing of GPT-NeoX and Hugging Face's Llama
    (Meta's original Llama code and RoFormer pair adjacent features instead; see the chapter 1 lab notes)."""
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


def rope_angles(positions: torch.Tensor, d_head: int, theta: float = 10000.0):
    """cos and sin of the rotation angles, each [T, d_head]. Pair i of a head rotates at
    frequency theta^(-2i/d_head): fast for the first pairs, slow for the last."""
    inv_freq = theta ** (-torch.arange(0, d_head, 2, dtype=torch.float32, device=positions.device) / d_head)  # [D/2]
    angles = positions.to(torch.float32)[:, None] * inv_freq[None, :]  # [T, D/2]
    angles = torch.cat((angles, angles), dim=-1)  # [T, D]
    return angles.cos(), angles.sin()


def _tracing() -> bool:
    """True while torch.onnx / torch.jit trace or torch.compile captures the model: then RoPE computes its
    angles from the positions (a graph op), never from a cached table (a constant of one length)."""
    return torch.jit.is_tracing() or torch.onnx.is_in_onnx_export() or torch.compiler.is_compiling()


class RoPE(nn.Module):
    """Rotary position embedding: rotates each (x_i, x_{i+D/2}) pair of Q and K by an angle
    proportional to the position, so q_m . k_n depends only on m - n. No parameters.

    ``rotate`` is the whole computation. ``forward`` gives exactly the same numbers, but takes cos and sin
    once for q and k from a table kept per device and dtype, which grows to the longest sequence seen, as
    Hugging Face's Llama computes them once per forward instead of in every layer (bench/bench_rope.py)."""

    def __init__(self, d_head: int, theta: float = 10000.0):
        super().__init__()
        self.d_head, self.theta = d_head, theta
        self._tables = {}  # (device, dtype, ...) -> (cos, sin), each [n, D]: positions 0 .. n-1

    def rotate(self, x, offset: int = 0):  # x: [B, H, T, D]
        positions = torch.arange(offset, offset + x.shape[-2], device=x.device)
        cos, sin = rope_angles(positions, self.d_head, self.theta)  # [T, D] each
        cos, sin = cos.to(x.dtype), sin.to(x.dtype)
        return x * cos + rotate_half(x) * sin

    def forward(self, q, k, offset: int = 0):  # q: [B, H, T, D], k: [B, H_kv, T, D]
        cos, sin = self.cos_sin(offset, q.shape[-2], q.device, q.dtype)  # [T, D] each (ScaledRoPE: [T, D/2])
        return self.turn(q, cos, sin), self.turn(k, cos, sin)

    def angles(self, positions, device):
        """cos and sin of the rotation angles at ``positions`` (float32), each [T, D]."""
        return rope_angles(positions, self.d_head, self.theta)

    def turn(self, x, cos, sin):  # the rotation itself, as in rotate
        return x * cos + rotate_half(x) * sin

    def cos_sin(self, offset: int, T: int, device, dtype):
        """cos and sin for positions offset .. offset + T - 1 in ``dtype``: rows of the cached table (computed
        again, to the next power of two, only when a longer sequence comes), or computed directly while the
        model is traced or compiled. The rows equal those ``rotate`` computes, bit for bit."""
        end = offset + T
        if _tracing():
            cos, sin = self.angles(torch.arange(offset, end, device=device), device)
            return cos.to(dtype), sin.to(dtype)
        key = (device, dtype) + self._table_key()
        table = self._tables.get(key)
        if table is None or table[0].shape[0] < end:
            with torch.inference_mode(False), torch.no_grad():  # a plain constant, usable in any later mode
                cos, sin = self.angles(torch.arange(max(16, 1 << (end - 1).bit_length()), device=device), device)
                table = self._tables[key] = (cos.to(dtype), sin.to(dtype))
        return table[0][offset:end], table[1][offset:end]

    def _table_key(self) -> tuple:
        return ()


def scaled_inv_freq(d: int, theta: float, scaling=None) -> torch.Tensor:
    """RoPE's D/2 frequencies theta^(-2i/D), then the config's scaling (a tinytf.config.RopeScaling):
    ``linear`` divides every frequency by the factor; ``llama3`` (Llama 3.1+) divides the low frequencies
    (wavelength > original_max_seq_len / low_freq_factor) by the factor, keeps the high ones
    (wavelength < original_max_seq_len / high_freq_factor) and blends in between."""
    inv_freq = theta ** (-torch.arange(0, d, 2, dtype=torch.float32) / d)  # [D/2]
    if scaling is None:
        return inv_freq
    if scaling.kind == "linear":
        return inv_freq / scaling.factor
    if scaling.kind == "yarn":
        return _yarn_inv_freq(inv_freq, d, theta, scaling)
    old = scaling.original_max_seq_len
    wavelen = 2 * math.pi / inv_freq
    low_wavelen, high_wavelen = old / scaling.low_freq_factor, old / scaling.high_freq_factor
    out = torch.where(wavelen > low_wavelen, inv_freq / scaling.factor, inv_freq)
    smooth = (old / wavelen - scaling.low_freq_factor) / (scaling.high_freq_factor - scaling.low_freq_factor)
    smoothed = (1 - smooth) * out / scaling.factor + smooth * out
    medium = (wavelen >= high_wavelen) & (wavelen <= low_wavelen)
    return torch.where(medium, smoothed, out)


def yarn_mscale(factor: float, mscale: float = 1.0) -> float:
    return 1.0 if factor <= 1 else 0.1 * mscale * math.log(factor) + 1.0


def rope_attention_factor(scaling) -> float:
    """YaRN multiplies cos and sin by this factor (1 for every other scaling), as transformers does."""
    if scaling is None or scaling.kind != "yarn":
        return 1.0
    if scaling.attention_factor is not None:
        return float(scaling.attention_factor)
    if scaling.mscale and scaling.mscale_all_dim:
        return yarn_mscale(scaling.factor, scaling.mscale) / yarn_mscale(scaling.factor, scaling.mscale_all_dim)
    return yarn_mscale(scaling.factor)


def _yarn_inv_freq(inv_freq, d: int, theta: float, s) -> torch.Tensor:
    """YaRN: frequencies that turn fewer than beta_slow times over the original context are interpolated
    (divided by the factor), those turning more than beta_fast times are kept, a linear ramp in between."""
    def correction_dim(rotations):
        return d * math.log(s.original_max_seq_len / (rotations * 2 * math.pi)) / (2 * math.log(theta))

    low, high = correction_dim(s.beta_fast), correction_dim(s.beta_slow)
    if s.truncate:
        low, high = math.floor(low), math.ceil(high)
    low, high = max(low, 0), min(high, d - 1)
    if low == high:
        high += 0.001
    ramp = torch.clamp((torch.arange(d // 2, dtype=torch.float32) - low) / (high - low), 0, 1)
    keep = 1 - ramp  # 1: extrapolate (keep the frequency), 0: interpolate
    return inv_freq / s.factor * (1 - keep) + inv_freq * keep


class ScaledRoPE(RoPE):
    """RoPE with the frontier options: a frequency scaling (``linear``, ``llama3``) and the pairing of
    dimensions: ``half`` rotates (x_i, x_{i+D/2}) as Hugging Face's Llama does; ``interleaved`` rotates
    (x_2i, x_2i+1) as RoFormer, Meta's original Llama code and DeepSeek do. The frequencies are fixed at
    construction (a non-persistent buffer), so forward has no branch on the scaling."""

    def __init__(self, d_head: int, theta: float = 10000.0, scaling=None, pairing: str = "half"):
        super().__init__(d_head, theta)
        self.scaling, self.pairing = scaling, pairing
        self.register_buffer("inv_freq", scaled_inv_freq(d_head, theta, scaling), persistent=False)
        self.attention_factor = rope_attention_factor(scaling)  # YaRN scales cos and sin; 1.0 otherwise
        self.turn = self.turn_interleaved if pairing == "interleaved" else self.turn_half
        self._tables = {}

    def turn_half(self, x, cos, sin):  # cos, sin: [T, D/2]
        cos, sin = torch.cat((cos, cos), dim=-1), torch.cat((sin, sin), dim=-1)
        return x * cos + rotate_half(x) * sin

    def turn_interleaved(self, x, cos, sin):
        x1, x2 = x[..., 0::2], x[..., 1::2]
        return torch.stack((x1 * cos - x2 * sin, x2 * cos + x1 * sin), dim=-1).flatten(-2)

    def rotate(self, x, offset: int = 0):  # x: [B, H, T, D]
        positions = torch.arange(offset, offset + x.shape[-2], device=x.device, dtype=torch.float32)
        cos, sin = self.angles(positions, x.device)  # [T, D/2] each
        return self.turn(x, cos.to(x.dtype), sin.to(x.dtype))

    def angles(self, positions, device):
        """cos and sin of the scaled angles at ``positions``, times YaRN's attention factor, each [T, D/2]."""
        angles = positions.to(torch.float32)[:, None] * self.inv_freq.to(device)[None, :]  # [T, D/2]
        return angles.cos() * self.attention_factor, angles.sin() * self.attention_factor

    def _table_key(self) -> tuple:
        return (self.inv_freq.dtype,)  # a model cast to another dtype casts this buffer too


class NoRotary(nn.Module):
    def forward(self, q, k, offset: int = 0):
        return q, k


def make_additive_positions(cfg: TinyConfig) -> nn.Module:
    return {"sinusoidal": SinusoidalPositions, "learned": LearnedPositions}.get(cfg.pos, lambda c: NoPositions())(cfg)


def make_rotary(cfg: TinyConfig, layer: int = 0) -> nn.Module:
    """The rotary module of layer ``layer``. A local (sliding-window) layer uses sliding_window.rope_theta_local
    when the config has one (Gemma 3: 10k, against 1M for the global layers), without scaling; every other layer
    uses rope_theta and rope_scaling. The plain RoPE class serves every config without the frontier options."""
    if cfg.pos != "rope":
        return NoRotary()
    local = cfg.layer_type(layer) == "local" and cfg.sliding_window.rope_theta_local is not None
    theta, scaling = (cfg.sliding_window.rope_theta_local, None) if local else (cfg.rope_theta, cfg.rope_scaling)
    if scaling is None and cfg.rope_pairing == "half" and cfg.rope_dim == cfg.d_head:
        return RoPE(cfg.d_head, theta)
    return ScaledRoPE(cfg.rope_dim, theta, scaling, cfg.rope_pairing)

"""Figure for the FFN chapter: the activation functions of tinytf's FFNs and their slopes.

ReLU and GELU are the modules tinytf.ffn.MLP uses (``tinytf.ffn.ACTIVATIONS``); SiLU is the
function tinytf.ffn.SwiGLU applies to its gate (``torch.nn.functional.silu``). Slopes come
from autograd, not from hand-written derivatives."""
from __future__ import annotations

import plotly.graph_objects as go
import torch
import torch.nn.functional as F
from plotly.subplots import make_subplots

from ..ffn import ACTIVATIONS
from .common import FONT, OKABE_ITO, two_line_title


_title = two_line_title


def activation_functions() -> dict:
    """{name: function} for the activations the book's FFNs use."""
    return {"ReLU (2017 MLP)": ACTIVATIONS["relu"](), "GELU (exact; GPT-2 uses the tanh form)": ACTIVATIONS["gelu"](),
            "SiLU (SwiGLU's gate)": F.silu}


def activation_curves(lo: float = -5.0, hi: float = 3.0, n: int = 321) -> dict:
    """{name: (z, f(z), f'(z))} as tensors [n]; f'(z) by autograd."""
    out = {}
    for name, fn in activation_functions().items():
        z = torch.linspace(lo, hi, n, requires_grad=True)
        y = fn(z)
        (slope,) = torch.autograd.grad(y.sum(), z)
        out[name] = (z.detach(), y.detach(), slope)
    return out


def activation_figure(lo: float = -5.0, hi: float = 3.0) -> go.Figure:
    """Left: the activation values; right: their slopes (what the gradient is multiplied by)."""
    curves = activation_curves(lo, hi)
    fig = make_subplots(rows=1, cols=2, horizontal_spacing=0.1,
                        subplot_titles=["activation f(z)", "slope f′(z)"])
    dashes = ["solid", "dash", "dot"]
    for n, (name, (z, y, slope)) in enumerate(curves.items()):
        style = dict(color=OKABE_ITO[n % len(OKABE_ITO)], width=2.5, dash=dashes[n % len(dashes)])
        fig.add_trace(go.Scatter(x=z.tolist(), y=y.tolist(), name=name, legendgroup=name, line=style,
                                 hovertemplate=f"{name}<br>z %{{x:.2f}}<br>f(z) %{{y:.4f}}<extra></extra>"),
                      row=1, col=1)
        fig.add_trace(go.Scatter(x=z.tolist(), y=slope.tolist(), name=name, legendgroup=name, line=style,
                                 showlegend=False,
                                 hovertemplate=f"{name}<br>z %{{x:.2f}}<br>f′(z) %{{y:.4f}}<extra></extra>"),
                      row=1, col=2)
    z_fine = torch.linspace(-3.0, 0.0, 30001)  # SiLU's minimum, found on a fine grid and marked on the left panel
    silu_fine = F.silu(z_fine)
    z_min, y_min = z_fine[silu_fine.argmin()].item(), silu_fine.min().item()
    fig.add_annotation(x=z_min, y=y_min, row=1, col=1, text=f"SiLU's minimum<br>{y_min:.3f} at z = {z_min:.2f}".replace("-", "−"),
                       showarrow=True, arrowhead=2, ax=-10, ay=-55, font=dict(size=11))
    for col in (1, 2):
        fig.update_xaxes(title="pre-activation z", zeroline=True, zerolinecolor="#444444", row=1, col=col)
        fig.update_yaxes(zeroline=True, zerolinecolor="#444444", row=1, col=col)
    title = _title("ReLU, GELU and SiLU, and their slopes",
                   "ReLU is exactly 0, with slope 0, for every negative input; GELU and SiLU are not")
    fig.update_layout(template="plotly_white", font=FONT, height=400, margin=dict(l=50, r=20, t=110, b=50),
                      legend=dict(orientation="h", y=-0.22), title=title)
    return fig

"""tinytf.viz: interactive views of tokens flowing through a Transformer block.

Every view takes a model and token ids (or a string, or a ready ``Trace``), runs
``model.run_with_trace`` once and draws numbers read from that trace; the math lives only in
tinytf's modules. Figures are plotly figures whose interactivity (frames, sliders, buttons,
hover) works without a kernel; ``show(fig)`` displays them deterministically (see
``tinytf.viz.render``). ``live_panel()`` adds ipywidgets controls in a live kernel
(its plot is a ``FigureView``, ``tinytf.viz.figure_view``, redrawn in place).

    import tinytf
    from tinytf.viz import show, block_stepper
    model = tinytf.TinyTransformer()
    show(block_stepper(model, "cat"))

Views (each: a model + ids / a string, or a Trace; numbers read from the trace only):
    block_stepper(model, ids, layer=0)          one animation frame per stage of a block
    attention_map(model_or_trace, ids, layer=0, kind="self"|"cross"|"encoder", heads="all"|"mean"|"each"|h)
    residual_view(model, ids, layer=0, sublayer="attn"|"ffn")
    ffn_expansion(model, ids, layer=0)          + ffn_sparsity(...) for the numbers
    shape_chain(B, T, C, n_heads, D, d_ff, seed) -> rows; format_shape_chain(rows) -> text
    live_panel(text="cat", ...)                 ipywidgets + anywidget, live kernels only
"""
from .render import SIGNIFICANT_DIGITS, figure_html, figure_json, init_notebook, mimebundle, reset_ids, show
from .stepper import MIXING_STAGES, block_stepper
from .stages import Panel, Stage, block_stages
from .attention_map import attention_map
from .residual import residual_view
from .ffn import ffn_expansion, ffn_sparsity
from .shapes import format_shape_chain, measure_mixing, shape_chain


def live_panel(*args, **kwargs):
    """ipywidgets panel (needs a live kernel); see tinytf.viz.panel.live_panel."""
    from .panel import live_panel as _live_panel  # imports ipywidgets only when a panel is made

    return _live_panel(*args, **kwargs)


__all__ = [
    "show", "figure_html", "figure_json", "mimebundle", "init_notebook", "reset_ids", "SIGNIFICANT_DIGITS",
    "block_stepper", "attention_map", "residual_view", "ffn_expansion", "ffn_sparsity",
    "shape_chain", "format_shape_chain", "measure_mixing", "live_panel",
    "block_stages", "Stage", "Panel", "MIXING_STAGES",
]

# The frontier block (chapter "The frontier block"): sliding windows, cache against context, router, QK-norm logits.
# (What they draw is measured in tinytf.lab.frontier: gradient_reach, logit_growth.)
from .frontier import (cache_context_figure, expert_load, logit_growth_figure, router_figure,  # noqa: E402
                       sliding_window_figure, window_masks)

__all__ += ["sliding_window_figure", "window_masks", "cache_context_figure", "expert_load",
            "router_figure", "logit_growth_figure"]

# The text model along its training run (issue #12): one head's map at every saved snapshot.
from .snapshots import head_comparison, snapshot_attention, visible_labels  # noqa: E402

__all__ += ["snapshot_attention", "head_comparison", "visible_labels"]

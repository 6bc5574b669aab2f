"""Live panel (needs a kernel): change the tokens, seed, norm, norm position, FFN type, the
head shown and the view; the model is rebuilt, traced again and the figure redrawn in place
(a ``FigureView`` widget: the browser keeps the plot and receives only what changed, then redraws
it with ``Plotly.react`` on the stage of the block stepper the reader was on).

Bad input (empty text, too many tokens, characters outside the vocabulary, impossible
settings) is reported as a message in the panel, never as a traceback.

Trained weights: ``checkpoints`` maps a name to a zero-argument callable returning a model.
If omitted, the decoder-only checkpoints of ``tinytf.pretrained`` (``names(kind="decoder")``,
``load(name)``) are offered in the "weights" menu next to "random init (seed)". A checkpoint
fixes the architecture, so the norm / FFN controls are disabled while it is chosen; text the
checkpoint's vocabulary cannot encode is reported as a message.
"""
from __future__ import annotations

import contextlib
import html

import ipywidgets as widgets
import torch

from ..config import TinyConfig
from ..errors import TinyTFInputError
from ..models import TinyTransformer
from ..seeding import seed_everything
from ..tokens import encode, token_labels
from .attention_map import attention_map
from .common import spec_only
from .ffn import ffn_expansion
from .figure_view import FigureView
from .residual import residual_view
from .static_panel import KEPT, NOTE, STYLE, TOO_MANY, WHY_MODEL, WHY_PANEL, model_key, panel_state, static_panel_html
from .stepper import block_stepper

VIEWS = {
    "stepper": "block stepper (all stages)",
    "attention": "attention map",
    "residual_attn": "residual add: attention",
    "residual_ffn": "residual add: FFN",
    "ffn": "FFN expansion",
}
RANDOM = "random init (seed)"
# what a panel cell shows before it runs (in Jupyter) or without scripts (in the book); in the book
# _static/tinytf-panel.js replaces it by the panel that runs the model in the browser (static_panel)
STATIC_NOTE = f'<div class="tinytf-live-note" style="{STYLE}">{NOTE}</div>'
SEED_MAX = 2**31 - 1


def _discover_checkpoints() -> dict:
    """Trained decoder-only checkpoints shipped with tinytf (``tinytf.pretrained``), if any:
    {"trained: <name>": loader} for the synthetic-task decoders, then {"trained: <name> (English bytes)": loader}
    for the byte-level text models (e.g. text-4l, trained on English docstrings). Seq2seq checkpoints are left
    out (the views show a decoder block)."""
    try:
        import importlib

        pretrained = importlib.import_module("tinytf.pretrained")
        names = list(pretrained.names(kind="decoder"))
    except Exception:  # noqa: BLE001 - no checkpoints (or a broken listing) must not break the panel
        return {}
    out = {f"trained: {n}": (lambda n=n: pretrained.load(n)) for n in names}
    try:
        text_names = [n for n in pretrained.names(kind="text") if n not in names]
    except Exception:  # noqa: BLE001 - a broken text listing must not hide the decoders
        text_names = []
    out.update({f"trained: {n} (English bytes)": (lambda n=n: pretrained.load(n)) for n in text_names})
    return out


@contextlib.contextmanager
def _one_torch_thread():
    """A three-token forward pass of a tiny model gains nothing from intra-op threads, and on a
    shared machine (Binder, Colab, CI) their spin-waiting can make it 10-50x slower; the panel
    runs its pass on one thread and restores the setting afterwards."""
    before = torch.get_num_threads()
    if before != 1:
        torch.set_num_threads(1)
    try:
        yield
    finally:
        if before != 1:
            torch.set_num_threads(before)


class LivePanel(widgets.VBox):
    """The panel widget. ``figure`` is the figure shown last, ``message`` the text shown above it
    ("" when all is well); ``update()`` redraws (called by every control) and returns the
    rendered figure dicts (a FigureSpec), or None after bad input."""

    def __init__(self, text: str = "cat", seed: int = 0, norm: str = "rms", norm_position: str = "pre",
                 ffn: str = "swiglu", view: str = "stepper", head="all", layer: int = 0,
                 config: TinyConfig | None = None, checkpoints: dict | None = None, max_tokens: int = 32):
        self.base_config = config or TinyConfig()
        self.max_tokens = max_tokens
        self.checkpoints = dict(_discover_checkpoints() if checkpoints is None else checkpoints)
        self._spec, self._figure = None, None
        self._cache_key, self._model, self._n_tokens = None, None, None
        style = {"description_width": "90px"}
        self.text = widgets.Text(value=text, description="tokens", continuous_update=False,
                                 placeholder="type a few characters", style=style,
                                 layout=widgets.Layout(width="260px"))
        # plain IntText: a value out of range is reported in the panel, never silently clamped
        self.seed = widgets.IntText(value=seed, description="seed", style=style, layout=widgets.Layout(width="200px"))
        self.weights = widgets.Dropdown(options=[RANDOM] + list(self.checkpoints), value=RANDOM,
                                        description="weights", style=style, layout=widgets.Layout(width="300px"))
        self.norm = widgets.ToggleButtons(options=[("RMSNorm", "rms"), ("LayerNorm", "layer")], value=norm,
                                          description="norm", style=dict(style, button_width="110px"))
        self.norm_position = widgets.ToggleButtons(options=[("pre-norm", "pre"), ("post-norm", "post")],
                                                   value=norm_position, description="position",
                                                   style=dict(style, button_width="110px"))
        self.ffn = widgets.Dropdown(options=[("SwiGLU", "swiglu"), ("ReLU", "relu"), ("GELU", "gelu")], value=ffn,
                                    description="FFN", style=style, layout=widgets.Layout(width="200px"))
        self.head = widgets.Dropdown(options=self._head_options(self.base_config.n_heads), value=head,
                                     description="heads", style=style, layout=widgets.Layout(width="200px"))
        self.view = widgets.Dropdown(options=[(v, k) for k, v in VIEWS.items()], value=view, description="view",
                                     style=style, layout=widgets.Layout(width="300px"))
        self.layer = widgets.IntText(value=layer, description="block", style=style, layout=widgets.Layout(width="160px"))
        self.message = widgets.HTML(value="")
        self.plot = FigureView(layout=widgets.Layout(width="100%"))
        controls = [self.text, self.seed, self.weights, self.norm, self.norm_position, self.ffn, self.head,
                    self.view, self.layer]
        super().__init__([
            widgets.HBox([self.text, self.seed, self.weights], layout=widgets.Layout(flex_flow="row wrap")),
            widgets.HBox([self.norm, self.norm_position], layout=widgets.Layout(flex_flow="row wrap")),
            widgets.HBox([self.ffn, self.view, self.head, self.layer], layout=widgets.Layout(flex_flow="row wrap")),
            self.message, self.plot,
        ])
        for w in controls:
            w.observe(self.update, names="value")
        self.update()

    # --- notebook display: the widget live, a note in the static book ---
    def _repr_mimebundle_(self, **kwargs):
        data = super()._repr_mimebundle_(**kwargs) or {}
        data["text/plain"] = "tinytf live panel"
        data["text/html"] = static_panel_html(self.static_state())
        return data

    def static_state(self) -> dict:
        """The panel as the book's page offers it (tinytf.viz.static_panel): the text, view, head and layer
        shown now, and the models the page has — the random init as "untrained" (seed 0) when this panel
        uses the default configuration, and the checkpoints by their keys."""
        models = (["untrained"] if self.base_config == TinyConfig() else []) + [model_key(n) for n in self.checkpoints]
        return panel_state(self.text.value, self.view.value, self.head.value, int(self.layer.value), self.max_tokens,
                           models, VIEWS)

    @staticmethod
    def _head_options(n_heads: int):
        return [("all heads", "all"), ("mean of heads", "mean")] + [(f"head {h}", h) for h in range(n_heads)]

    def config(self) -> TinyConfig:
        """The configuration the controls describe (the base config with norm / position / FFN set)."""
        return self.base_config.replace(norm=self.norm.value, norm_position=self.norm_position.value,
                                        ffn=self.ffn.value)

    def model(self):
        """The model for the current controls (rebuilt only when the config, seed or weights change)."""
        ckpt = self.weights.value
        if ckpt == RANDOM and not 0 <= int(self.seed.value) <= SEED_MAX:
            raise TinyTFInputError(f"the seed must be a whole number from 0 to {SEED_MAX}; got {self.seed.value}")
        key = (ckpt, None) if ckpt != RANDOM else (RANDOM, self.config(), int(self.seed.value))
        if key != self._cache_key:
            if ckpt != RANDOM:
                model = self.checkpoints[ckpt]()
            else:
                seed_everything(int(self.seed.value))
                model = TinyTransformer(key[1])
            self._model, self._cache_key = model.eval(), key
        return self._model

    def ids(self, cfg: TinyConfig) -> torch.Tensor:
        ids = encode(self.text.value, cfg.vocab_size)  # raises TinyTFInputError for empty / out-of-vocab text
        limit = min(cfg.max_seq_len, self.max_tokens)
        if len(ids) > limit:
            why = (WHY_MODEL.format(max_seq_len=cfg.max_seq_len) if limit == cfg.max_seq_len
                   else WHY_PANEL.format(max_tokens=self.max_tokens))
            raise TinyTFInputError(TOO_MANY.format(n=len(ids), text=repr(self.text.value), why=why, limit=limit))
        return ids

    def build_figure(self):
        with _one_torch_thread():
            return self._build_figure()

    def _build_figure(self):
        model = self.model()
        cfg = model.config
        ids = self.ids(cfg)
        fixed = self.weights.value != RANDOM
        for w in (self.norm, self.norm_position, self.ffn):
            w.disabled = fixed
        if list(self._head_options(cfg.n_heads)) != list(self.head.options):
            keep = self.head.value if self.head.value in ("all", "mean") else "all"
            with self.head.hold_trait_notifications():
                self.head.options = self._head_options(cfg.n_heads)
                self.head.value = keep
        layer = int(self.layer.value)
        if not 0 <= layer < cfg.n_layers:
            raise TinyTFInputError(f"block {layer} does not exist: this model has {cfg.n_layers} blocks "
                                   f"(0..{cfg.n_layers - 1})")
        labels = readable_labels(self.text.value, ids)
        self._n_tokens = len(ids)
        view = self.view.value
        if view == "stepper":
            return block_stepper(model, ids, layer=layer, labels=labels)
        if view == "attention":
            return attention_map(model, ids, layer=layer, heads=self.head.value, labels=labels)
        if view == "residual_attn":
            return residual_view(model, ids, layer=layer, sublayer="attn", labels=labels)
        if view == "residual_ffn":
            return residual_view(model, ids, layer=layer, sublayer="ffn", labels=labels)
        return ffn_expansion(model, ids, layer=layer, labels=labels)

    @property
    def figure(self):
        """The figure shown last, as a plotly figure (built from the rendered dicts on first access)."""
        if self._figure is None and self._spec is not None:
            self._figure = self._spec.to_figure()
        return self._figure

    def update(self, *_):
        try:
            with spec_only():  # render the dicts directly: a go.Figure would cost tens of ms
                spec = self.build_figure()
        except TinyTFInputError as e:
            return self._report(str(e))
        except ValueError as e:  # an impossible configuration (TinyConfig validation)
            return self._report(f"these settings do not make a valid model: {e}")
        except Exception as e:  # noqa: BLE001 - the panel must never show a traceback
            return self._report(f"could not draw the figure ({type(e).__name__}: {e})")
        _add_template(spec)  # the same look as a figure shown in a cell (plotly's default template)
        self._spec, self._figure = spec, None
        self.message.value = ""
        # Only what changed travels to the browser (the whole figure when the view or the traces / frames
        # change); the browser keeps its plot div and stage. Never a captured display (`with Output:`): a
        # display this size makes nbclient / nbconvert wait for their timeout after the cell has finished.
        self.plot.set_figure(spec, key=(self.view.value, self._n_tokens))  # another token count: every array resized
        return spec

    def _report(self, text: str):
        kept = KEPT if self._spec is not None else ""
        self.message.value = (f'<div class="tinytf-panel-message" style="color:#a40000;padding:4px 0;">'
                              f"⚠ {html.escape(text.rstrip('.'))}.{kept}</div>")
        return None


_SUPERSCRIPT = str.maketrans("0123456789", "⁰¹²³⁴⁵⁶⁷⁸⁹")


def readable_labels(text: str, ids) -> list | None:
    """Axis labels for byte-level ids: a character of several bytes labels each of its bytes with the
    character and the byte's number ("你¹", "你²", "你³") instead of a byte value ("#228").
    None (the views' own labels) when the ids are not the text's UTF-8 bytes."""
    ids = [int(i) for i in (ids.tolist() if hasattr(ids, "tolist") else ids)]
    if list(text.encode("utf-8")) != ids:
        return None
    base = token_labels(torch.tensor(ids))
    labels, k = [], 0
    for ch in text:
        n = len(ch.encode("utf-8"))
        if n == 1:
            labels.append(base[k])
        else:
            labels += [ch + str(j + 1).translate(_SUPERSCRIPT) for j in range(n)]
        k += n
    return labels


_TEMPLATE = None


def _add_template(spec) -> None:
    """Give a figure built as plain dicts the template a go.Figure gets (plotly.io.templates.default)."""
    global _TEMPLATE
    layout = spec.get("layout", {})
    if "template" in layout:
        return
    if _TEMPLATE is None:
        import plotly.io as pio

        _TEMPLATE = pio.templates[pio.templates.default].to_plotly_json()
    layout["template"] = _TEMPLATE


def live_panel(text: str = "cat", seed: int = 0, norm: str = "rms", norm_position: str = "pre",
               ffn: str = "swiglu", view: str = "stepper", head="all", layer: int = 0,
               config: TinyConfig | None = None, checkpoints: dict | None = None, max_tokens: int = 32) -> LivePanel:
    """An ipywidgets panel over the views of this package (see LivePanel). In the static book
    it displays as a note asking the reader to launch Binder or Colab."""
    return LivePanel(text=text, seed=seed, norm=norm, norm_position=norm_position, ffn=ffn, view=view, head=head,
                     layer=layer, config=config, checkpoints=checkpoints, max_tokens=max_tokens)

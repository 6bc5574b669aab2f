"""tinytf: a tiny, fully traceable Transformer shared by every chapter of the book.

Modules, in the order the book teaches them:
config -> norms -> ffn -> positions -> attention -> blocks -> models -> generation
-> parameters -> causality -> tracing -> viz (optional: needs plotly/matplotlib/ipywidgets).
"""
from .config import TinyConfig, config_2017, config_2026
from .errors import TinyTFInputError
from .tokens import encode, decode, token_labels
from .norms import RMSNorm, LayerNorm, make_norm
from .ffn import MLP, SwiGLU, make_ffn
from .positions import RoPE, SinusoidalPositions, LearnedPositions, sinusoidal_table, rope_angles
from .attention import attention, causal_mask, Attention, KVCache, LayerCache
from .blocks import DecoderBlock, EncoderBlock, CrossDecoderBlock, make_connection
from .models import TinyTransformer, EncoderDecoder, check_ids, init_weights
from .generation import generate, generate_seq2seq, pick_next
from .parameters import (parameter_table, format_table, count_parameters, meta_model, approx_layer_params,
                         exact_layer_params, LLAMA3_8B, GPT2_SMALL)
from .causality import causality_check, causality_sweep, sweep_report, broken_mask, off_by_one_mask
from .tracing import run_with_trace, recording, Trace, TRACE_NAMES
from .precision import below

__version__ = "0.1.0"


def seed_everything(seed: int = 0):
    """Seed torch and Python's random module so a chapter gives the same numbers on every run."""
    import random

    import torch

    random.seed(seed)
    torch.manual_seed(seed)

# Submodules added on top of the core (each importable on its own as well).
from . import tasks, pretrained  # noqa: E402  (tinytf.pretrained("induction-2l") loads a shipped checkpoint)
from . import review, cache_memory  # noqa: E402  (modules: tinytf.review.review(cfg), tinytf.cache_memory...)
from .review import format_review, review_table  # noqa: E402
from .cache_memory import kv_cache_bytes  # noqa: E402
# The frontier block (chapter "The frontier block"): MoE, MLA, Hugging Face configs and checkpoints.
from . import moe, mla, hf  # noqa: E402
from .config import RopeScaling  # noqa: E402
from .moe import MoE, RouterTopK  # noqa: E402
from .mla import LatentAttention, LatentCache  # noqa: E402
from .attention import WindowLayerCache, sliding_window_mask  # noqa: E402
from .hf import config_from_hf, from_hf, HFConfigError  # noqa: E402
from .parameters import active_parameters  # noqa: E402
from .tracing import FRONTIER_TRACE_NAMES  # noqa: E402
from .cache_memory import cache_by_layer, cache_bytes_per_token  # noqa: E402
from .hf import published_config, PUBLISHED_CONFIGS  # noqa: E402
from .review import frontier_review, frontier_review_table  # noqa: E402
# Real text (issue #12): the stdlib-docstring corpus, n-gram baselines, nucleus sampling; the text model is
# tinytf.pretrained("text-4l") (snapshots: tinytf.pretrained.snapshots("text-4l")).
from . import textdata  # noqa: E402
from .generation import top_p_filter, top_k_filter, next_token_probs  # noqa: E402
from .textdata import bits_per_byte, unigram_bits_per_byte, bigram_bits_per_byte  # noqa: E402
from . import exercises  # noqa: E402  (the book's implement-and-check exercises: tinytf.exercises.check)
# Looking inside the text model (issue #12): head-pattern scores and the logit lens.
from . import heads, lens  # noqa: E402
from .lens import logit_lens  # noqa: E402

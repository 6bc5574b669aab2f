"""tinytf: a tiny, fully traceable Transformer shared by every chapter of the book.

The layout shows the architecture:

* the model core, ``tinytf/*.py``, in the order the book teaches it: config -> tokens -> norms -> ffn (and
  moe) -> positions -> attention (and mla) -> blocks -> models -> hooks/tracing -> generation;
* the book's laboratory, ``tinytf/lab/``: tasks and training, the shipped checkpoints, measurements
  (causality, gradients, head scores, the logit lens, the 2017-vs-2026 study), calculators (parameters,
  KV-cache memory), the block reviewer, Hugging Face and PyTorch interop, the exercises;
* the figures, ``tinytf/viz/`` (optional: needs plotly/matplotlib/ipywidgets).

Everything a chapter uses is importable from ``tinytf`` itself (``tinytf.TinyConfig``, ``tinytf.generate``,
``tinytf.pretrained(...)``, ...), and every laboratory module also by its short name (``tinytf.train``).
"""
import sys as _sys

# --- the model core --------------------------------------------------------------------------------------
from .config import TinyConfig, RopeScaling, SlidingWindow, MoEOptions, MLAOptions, config_2017, config_2026
from .errors import TinyTFInputError
from .seeding import seed_everything
from .tokens import encode, decode, token_labels
from .norms import RMSNorm, LayerNorm, make_norm
from .ffn import MLP, SwiGLU, make_dense_ffn, llama_hidden_size, zero_count_table
from .moe import MoE, RouterTopK
from .positions import RoPE, SinusoidalPositions, LearnedPositions, sinusoidal_table, rope_angles
from .attention import attention, causal_mask, Attention, KVCache, LayerCache, WindowLayerCache, sliding_window_mask
from .mla import LatentAttention, LatentCache
from .blocks import DecoderBlock, EncoderBlock, CrossDecoderBlock, make_connection, make_attention, make_ffn
from .models import TinyTransformer, EncoderDecoder, check_ids, init_weights
from .tracing import run_with_trace, recording, Trace, TRACE_NAMES, FRONTIER_TRACE_NAMES
from .generation import (generate, generate_seq2seq, pick_next, top_p_filter, top_k_filter, next_token_probs,
                         CacheStep)
from . import moe, mla  # noqa: F401  (modules: tinytf.moe.MoE, tinytf.mla.LatentAttention)

__version__ = "0.1.0"


# --- the book's laboratory (tinytf/lab) ----------------------------------------------------------------------
from . import lab  # noqa: E402
from .lab import (tasks, textdata, train, pretrained, causality, experiments, block_comparison, heads, lens,  # noqa: E402
                  decoding, precision, parameters, cache_memory, review, hf, interop, exercises, book,
                  onnx_export)
from .lab.parameters import (parameter_table, format_table, count_parameters, active_parameters, meta_model,  # noqa: E402
                             approx_layer_params, exact_layer_params, LLAMA3_8B, GPT2_SMALL)
from .lab.causality import causality_check, causality_sweep, sweep_report, broken_mask, off_by_one_mask  # noqa: E402
from .lab.precision import below  # noqa: E402
from .lab.review import format_review, review_table, frontier_review, frontier_review_table  # noqa: E402
from .lab.cache_memory import kv_cache_bytes, cache_by_layer, cache_bytes_per_token  # noqa: E402
from .lab.hf import config_from_hf, from_hf, HFConfigError, published_config, PUBLISHED_CONFIGS  # noqa: E402
from .lab.textdata import bits_per_byte, unigram_bits_per_byte, bigram_bits_per_byte  # noqa: E402
from .lab.lens import logit_lens  # noqa: E402
from .lab.onnx_export import export_onnx  # noqa: E402

# First-edition module names: `import tinytf.train`, `from tinytf.tasks import ...` find the lab modules
# (the same module objects, not copies).
for _name in lab.MODULES:
    _sys.modules.setdefault(f"{__name__}.{_name}", getattr(lab, _name))
del _name

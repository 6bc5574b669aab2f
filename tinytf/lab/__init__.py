"""The book's laboratory: everything the chapters use to study the model, apart from the model itself.

The model core (``tinytf/*.py``: config, norms, ffn, moe, positions, attention, mla, blocks, models,
hooks, tracing, generation) is what a Transformer *is*; the laboratory is what the book *does* with it:

* data and training: ``tasks`` (synthetic tasks), ``textdata`` (the English corpus and n-gram baselines),
  ``train`` (``python -m tinytf train``), ``pretrained`` (the shipped checkpoints);
* measurements: ``causality``, ``experiments`` (layer-by-layer gradients), ``block_comparison`` (2017 vs
  2026), ``heads`` (head-pattern scores), ``lens`` (the logit lens), ``decoding`` (what generation produced),
  ``precision`` (printing a number at the precision it supports), ``ablation`` (zero- and mean-ablation of a
  sublayer), ``kv_sharing`` (what grouped and multi-query
  attention save), ``norm_experiments`` (deep stacks with and without a norm), ``residual_updates`` (each
  sublayer's update against the stream), ``context_length`` (loss by position past the trained length,
  position interpolation), ``frontier`` (chapter 11: how far sliding-window layers reach, attention logits
  growing with and without QK-norm; ``python -m tinytf record-qk-norm``), ``prefill_decode`` (FLOPs per byte and time per token of the two phases, time per generation step naive and cached), ``padding`` (batches of different
  lengths and their key-padding masks), ``other_seeds`` (the shipped checkpoints against the same recipe trained
  from other seeds; ``scripts/other_seeds.py``);
* calculators and readers: ``parameters``, ``cache_memory``, ``review`` (the block reviewer), ``hf``
  (Hugging Face configs and weights), ``interop`` (PyTorch's own modules);
* the book itself: ``exercises`` (implement-and-check), ``book`` (the Colab/Binder set-up cell),
  ``onnx_export`` (the model as an ONNX file with every trace point, for the book's in-browser figures).

Each module is also importable by its first-edition name, ``tinytf.<module>`` (e.g. ``tinytf.train``,
``from tinytf.tasks import InductionTask``): ``tinytf/__init__.py`` registers those names.
"""
MODULES = ("tasks", "textdata", "train", "pretrained", "causality", "experiments", "block_comparison", "heads",
           "lens", "decoding", "precision", "parameters", "cache_memory", "review", "hf", "interop", "exercises",
           "book", "onnx_export")

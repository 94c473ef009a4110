"""Evaluating tokenizers on text: per-group compression (``numtok.evaluate``, ``numtok eval``) and
the vocabulary-size sweep of one training run (``numtok.sweep``, ``numtok sweep``)."""

"""Encoding: the Tokenizer, its tables and kernels (docs/design.md §5)."""

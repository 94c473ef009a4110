"""BPE training: word counting and the merge loop (docs/design.md §4)."""

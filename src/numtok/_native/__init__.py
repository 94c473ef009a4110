"""Low-level helpers for kernels: intrinsics, UTF-8, threads, memory, the JIT cache (docs/design.md §7-10)."""

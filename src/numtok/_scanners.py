"""Numba scanners for the named pre-tokenization patterns (being written: issue 3)."""

from __future__ import annotations


def has_scanner(name: str) -> bool:
    return False

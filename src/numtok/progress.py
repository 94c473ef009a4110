"""A small stderr progress bar: bytes with MB/s and ETA, or counts (merges) done/total.

Used by the trainer and the command line; no dependency. Enabled by default only when stderr
is a terminal, so logs and pipes stay clean.
"""

from __future__ import annotations

import sys
import time


class Progress:
    """Progress of one stage, redrawn at most ten times a second.

    Args:
        desc: what is being done ("Counting words").
        total: the expected final value, or None when unknown (no ETA then).
        unit: "B" shows bytes as MB with MB/s; anything else is shown as a count with that unit.
        enabled: None = only when stderr is a terminal.

    >>> p = Progress("Merging", total=10, unit="merges", enabled=False)
    >>> p.update(4); p.value
    4
    >>> p.close()
    """

    def __init__(self, desc: str, total: int | None = None, unit: str = "B", enabled: bool | None = None, stream=None):
        self.stream = stream if stream is not None else sys.stderr
        if enabled is None:
            enabled = bool(getattr(self.stream, "isatty", lambda: False)())
        self.enabled = enabled
        self.desc, self.total, self.unit = desc, total, unit
        self.value = 0
        self._start = time.perf_counter()
        self._last_draw = 0.0

    def update(self, n: int) -> None:
        self.set(self.value + n)

    def set(self, value: int) -> None:
        self.value = value
        if self.enabled:
            now = time.perf_counter()
            if now - self._last_draw >= 0.1:
                self._last_draw = now
                self._draw(now)

    def close(self) -> None:
        if self.enabled:
            self._draw(time.perf_counter())
            self.stream.write("\n")
            self.stream.flush()

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _draw(self, now: float) -> None:
        elapsed = max(now - self._start, 1e-9)
        rate = self.value / elapsed
        if self.unit == "B":
            done = f"{self.value / 1e6:,.1f}" + (f"/{self.total / 1e6:,.1f}" if self.total else "") + " MB"
            speed = f"{rate / 1e6:,.1f} MB/s"
        else:
            done = f"{self.value:,}" + (f"/{self.total:,}" if self.total else "") + f" {self.unit}"
            speed = f"{rate:,.0f} {self.unit}/s"
        bar = ""
        eta = ""
        if self.total:
            frac = min(self.value / self.total, 1.0)
            filled = int(frac * 24)
            bar = "[" + "#" * filled + "." * (24 - filled) + f"] {frac * 100:5.1f}% "
            if rate > 0 and frac < 1:
                eta = f" ETA {(self.total - self.value) / rate:,.1f}s"
        self.stream.write(f"\r{self.desc}: {bar}{done} {speed} {elapsed:,.1f}s{eta}   ")
        self.stream.flush()

"""Learning-rate warm-up then decay."""

from __future__ import annotations

import math


def learning_rate(
    step: int, peak: float, warmup: int, decay: str = "inverse_sqrt"
) -> float:
    """The rate for ``step`` (counted from 1).

    Warm-up: step i of the first n uses ``i * p / n``, reaching the peak p at
    step n. Then ``inverse_sqrt`` decays as ``p * sqrt(n / i)`` (the Transformer
    paper's schedule), or ``constant`` stays at p.
    """
    if step < 1:
        raise ValueError("steps are counted from 1")
    if warmup > 0 and step <= warmup:
        return peak * step / warmup
    if decay == "inverse_sqrt":
        return peak * math.sqrt(max(warmup, 1) / step)
    return peak

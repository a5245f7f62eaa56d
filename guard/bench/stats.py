"""Proportions with honest uncertainty: Wilson score intervals (well behaved at 0 and 1 and for small n), from scipy."""

from __future__ import annotations

from scipy.stats import binomtest

CONFIDENCE = 0.95


def rate(k: int, n: int) -> float | None:
    return k / n if n else None


def wilson(k: int, n: int, confidence: float = CONFIDENCE) -> tuple[float, float] | None:
    """The Wilson interval for k successes in n trials; None when n is 0."""
    if n == 0:
        return None
    if not 0 <= k <= n:
        raise ValueError(f"wilson interval needs 0 <= k <= n, got k={k}, n={n}")
    interval = binomtest(k, n).proportion_ci(confidence_level=confidence, method="wilson")
    return max(0.0, float(interval.low)), min(1.0, float(interval.high))


def rounded(interval: tuple[float, float] | None, digits: int = 4) -> list[float] | None:
    """An interval as the JSON reports write it: a pair rounded to `digits`, or None."""
    return None if interval is None else [round(interval[0], digits), round(interval[1], digits)]


def ci95(k: int, n: int) -> list[float] | None:
    """The Wilson interval of k in n as the JSON reports write it ("..._ci95"); None when n is 0."""
    return rounded(wilson(k, n))


def pct(value: float | None, digits: int = 1) -> str:
    return "-" if value is None else f"{100 * value:.{digits}f}%"


def pct_ci(k: int, n: int) -> str:
    """'95.0% [93.1-96.4]' for the terminal and the report."""
    interval = wilson(k, n)
    if interval is None:
        return "-"
    return f"{pct(k / n)} [{100 * interval[0]:.1f}-{100 * interval[1]:.1f}]"

"""Where the shipped benchmark data lives (benchmarks/data in the source tree; overridable for installs)."""

from __future__ import annotations

import os
from pathlib import Path

DATA_ENV = "COUCHGUARD_BENCH_DATA"
DEFAULT_DATA = Path(__file__).resolve().parents[2] / "benchmarks" / "data"


def data_dir() -> Path:
    return Path(os.environ.get(DATA_ENV) or DEFAULT_DATA)


def data_file(*parts: str) -> Path:
    path = data_dir().joinpath(*parts)
    if not path.exists():
        raise FileNotFoundError(
            f"benchmark file {path} is missing; set {DATA_ENV} to the benchmarks/data folder "
            "of a couchguard source checkout"
        )
    return path

"""Where the shipped benchmark data lives (benchmarks/data in the source tree; overridable for installs)."""

from __future__ import annotations

from pathlib import Path

from classifiers.settings import Settings, settings

DATA_ENV = Settings.env("bench_data")
DEFAULT_DATA = Path(__file__).resolve().parents[2] / "benchmarks" / "data"


def data_dir() -> Path:
    return settings().bench_data or DEFAULT_DATA


def data_file(*parts: str) -> Path:
    path = data_dir().joinpath(*parts)
    if not path.exists():
        raise FileNotFoundError(
            f"benchmark file {path} is missing; set {DATA_ENV} to the benchmarks/data folder "
            "of a couchguard source checkout"
        )
    return path

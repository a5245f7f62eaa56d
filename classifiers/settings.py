"""Every COUCHGUARD_* environment setting, in one model (the offline defaults for third-party libraries: offline.py).

The settings live here, in the lowest layer, so that classifiers/ reads them without importing guard/ (guard reads
them from here too). They are read when asked for (`settings()`), not once at import: a test's `monkeypatch.setenv`,
or `couchguard export-onnx` pointing the encoder at the graphs it has just written, takes effect at once. An empty
variable counts as unset, as it always has.

| variable | what it sets | default |
|---|---|---|
| `COUCHGUARD_ARTIFACTS` | the signal heads' folder | classifiers/artifacts |
| `COUCHGUARD_ENCODER` | a sentence-transformers folder to encode with | the shipped fine-tuned encoder |
| `COUCHGUARD_BACKEND` | `torch`, `onnx` or `onnx-int8` | `onnx` (classifiers/scorer.py `DEFAULT_BACKEND`) |
| `COUCHGUARD_ONNX_DIR` | the exported ONNX graphs' folder | classifiers/encoder_onnx |
| `COUCHGUARD_BENCH_DATA` | the benchmarks/data folder (for installs without the source tree) | benchmarks/data |
| `XDG_CACHE_HOME` | caches go to its `couchguard/` (embeddings, bench completions, playground scores) | ~/.cache |
"""

from __future__ import annotations

from pathlib import Path

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

ENV_PREFIX = "COUCHGUARD_"


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix=ENV_PREFIX, env_ignore_empty=True, extra="ignore", frozen=True)

    artifacts: Path | None = None
    encoder: Path | None = None
    backend: str | None = None  # validated where it is chosen (classifiers/scorer.py `runtime_backend`)
    onnx_dir: Path | None = None
    bench_data: Path | None = None
    xdg_cache_home: Path = Field(default_factory=lambda: Path.home() / ".cache", validation_alias="XDG_CACHE_HOME")

    @property
    def cache_dir(self) -> Path:
        """couchguard's own cache folder; each cache takes a subfolder (or a file named for what it caches)."""
        return self.xdg_cache_home / "couchguard"

    @staticmethod
    def env(field: str) -> str:
        """The variable that sets `field`, for messages that tell a person what to set."""
        return ENV_PREFIX + field.upper()


def settings() -> Settings:
    return Settings()

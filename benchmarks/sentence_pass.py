"""Can the response's sentence pass reuse the window pass? Decisions changed on Moore et al.'s responses, per design.

    python benchmarks/sentence_pass.py [--limit 300]

When a user harm signal reaches `SignalScorer.sentence_gate`, the response is encoded twice: by windows, and sentence
by sentence (each sentence alone, as the sentence heads were trained). Two one-pass designs are measured against that,
with the shipped heads and thresholds, on the responses that take the sentence pass:

- span pooling: each sentence's vector is the mean of its tokens' hidden states from the window's own forward pass
  (one pass; the sentence now reads its neighbours).
- windows from sentences: each window's vector is the token-weighted mean of its sentences' vectors (one pass over
  the sentences; the window loses the attention across sentences).

For each: the cosine of the replaced vectors to the real ones, the largest score change of an assistant signal, and
how many output decisions (action, or the rules matched) change under the mental-health policy.
"""

from __future__ import annotations

import argparse
import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--limit", type=int, default=300, help="Moore responses (evenly spaced)")
    args = parser.parse_args()

    from classifiers import SIGNALS, parse_conversation, shared_scorer
    from classifiers.features import Featurizer, combine
    from guard.bench.checking import evenly_spaced
    from guard.bench.suites.moore_data import labelled_responses
    from guard.pipeline import Guard

    scorer = shared_scorer()
    encoder = scorer.encoder_
    if encoder.backend_ == "torch":
        raise SystemExit("span pooling reads the ONNX graph's hidden states: run with the onnx backend")
    guard = Guard.from_policy("mental-health", scorer=scorer)
    dimension = encoder.dimension_
    assistant = [name for name, spec in SIGNALS.items() if spec.side == "assistant"]

    def hidden_states(text: str) -> tuple[np.ndarray, list[tuple[int, int]]]:
        encoded = encoder.tokenizer_(text, truncation=True, max_length=256, return_offsets_mapping=True)
        offsets = encoded.pop("offset_mapping")
        padded = encoder.tokenizer_.pad([encoded], return_tensors="np")
        feed = {name: np.asarray(padded[name], dtype=np.int64) for name in encoder._runner.inputs}
        [hidden] = encoder._runner.session.run(None, feed)
        return hidden[0], offsets

    def unit(vectors: np.ndarray) -> np.ndarray:
        return (vectors / np.maximum(np.linalg.norm(vectors, axis=-1, keepdims=True), 1e-12)).astype(np.float32)

    def scores(windows: np.ndarray, sentences: np.ndarray) -> dict[str, float]:
        out = {}
        for name in assistant:
            rows = windows if SIGNALS[name].unit == "window" else np.vstack([sentences, windows])
            out[name] = float(scorer.heads_[name].predict_proba(rows)[:, 1].max())
        return out

    def decision(user: dict[str, float], signals: dict[str, float]) -> tuple[str, tuple[str, ...]]:
        verdict = guard._verdicts({**user, **signals})[1]
        return verdict.action, tuple(sorted(rule.id for rule in verdict.matched))

    every = labelled_responses()
    designs = ("span pooling", "windows from sentences")
    cosines: dict[str, list[float]] = {d: [] for d in designs}
    changes: dict[str, list[float]] = {d: [] for d in designs}
    changed = dict.fromkeys(designs, 0)
    gated = 0
    for index in evenly_spaced(len(every), args.limit):
        item = every[index]
        conversation = parse_conversation(item.turns + [{"role": "assistant", "content": item.response}])
        user = {name: result.score for name, result in scorer.score(conversation, ("user",)).items()}
        if not scorer.scores_sentences(user):
            continue
        [features] = Featurizer(encoder, scorer.embeddings_.for_call()).featurize(
            [conversation], "assistant", sentences=True
        )
        if features is None or features.sentence_matrix is None or not len(features.sentence_spans):
            continue
        gated += 1
        windows, alone = features.matrix, features.sentence_matrix
        context = windows[0, dimension : 2 * dimension]
        exact = scores(windows, alone)
        spans = features.sentence_spans
        pooled, rebuilt = [], []
        for number, chunk in enumerate(features.chunks):
            inside = [i for i, (a, b) in enumerate(spans) if chunk.start <= a and b <= chunk.end]
            hidden, offsets = hidden_states(chunk.text)
            for i in inside:
                a, b = spans[i][0] - chunk.start, spans[i][1] - chunk.start
                tokens = [t for t, (s, e) in enumerate(offsets) if e > s and s >= a and e <= b]
                pooled.append(hidden[tokens].mean(axis=0) if tokens else np.zeros(dimension, np.float32))
            if inside:
                weights = np.array(
                    [
                        len(
                            encoder.tokenizer_(chunk.text[spans[i][0] - chunk.start : spans[i][1] - chunk.start])[
                                "input_ids"
                            ]
                        )
                        for i in inside
                    ],
                    np.float32,
                )
                rebuilt.append((alone[inside, :dimension] * weights[:, None]).sum(axis=0))
            else:
                rebuilt.append(windows[number, :dimension])
        span_vectors, window_vectors = unit(np.array(pooled)), unit(np.array(rebuilt))
        candidates = {
            "span pooling": (span_vectors, alone[:, :dimension], scores(windows, combine(span_vectors, context))),
            "windows from sentences": (
                window_vectors,
                windows[:, :dimension],
                scores(combine(window_vectors, context), alone),
            ),
        }
        for design, (replaced, real, new) in candidates.items():
            cosines[design].extend(np.sum(replaced * real, axis=1).tolist())
            changes[design].append(max(abs(new[n] - exact[n]) for n in assistant))
            changed[design] += decision(user, new) != decision(user, exact)
    print(f"{args.limit} Moore responses, {gated} through the sentence pass (mental-health policy):")
    for design in designs:
        print(
            f"  {design:24s} cosine to the real vectors p50 {np.median(cosines[design]):.3f}, largest score change "
            f"p50 {np.median(changes[design]):.3f} / p95 {np.percentile(changes[design], 95):.3f}, decisions "
            f"changed {changed[design]} ({100 * changed[design] / max(gated, 1):.1f}%)"
        )


if __name__ == "__main__":
    main()

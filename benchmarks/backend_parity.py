"""Do the ONNX backends decide what torch decides? Moore et al.'s labelled responses through `check`, per backend.

For an evenly spaced sample of the responses (user stimulus + response, the output rail), reports per backend: the
largest and mean score difference to torch for each signal, how many conversations cross a signal's threshold one way
and not the other, and how many `check` actions change. Accuracy on labelled sets is `couchguard eval`'s job
(run it with COUCHGUARD_BACKEND=...); this measures agreement on real responses.
Run: `.venv/bin/python benchmarks/backend_parity.py --limit 200`.
"""

from __future__ import annotations

import argparse
import json
import os
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--limit", type=int, default=200)
    parser.add_argument("--backends", nargs="+", default=["onnx", "onnx-int8"])
    parser.add_argument("--json", default=None, help="write the figures to this file")
    args = parser.parse_args()

    from classifiers import SIGNALS, SignalScorer, parse_conversation
    from guard.bench.checking import evenly_spaced
    from guard.bench.suites.moore_data import labelled_responses
    from guard.pipeline import Guard

    every = labelled_responses()
    conversations = [parse_conversation(every[i].messages) for i in evenly_spaced(len(every), args.limit)]

    def run(backend: str):
        guard = Guard.from_policy("mental-health", scorer=SignalScorer(backend=backend).load())
        started = time.perf_counter()
        decisions = guard.check_many(conversations)
        seconds = time.perf_counter() - started
        return guard, decisions, seconds, guard.scorer.encoder_.backend_

    reference, torch_decisions, torch_seconds, _ = run("torch")
    thresholds = reference.thresholds()
    names = list(SIGNALS)
    torch_scores = np.array([[d.signals[n] for n in names] for d in torch_decisions])
    figures = {"conversations": len(conversations), "torch_seconds": round(torch_seconds, 2), "backends": {}}
    print(f"{len(conversations)} Moore conversations; torch {torch_seconds:.1f} s")
    for backend in args.backends:
        _, decisions, seconds, used = run(backend)
        if used != backend:
            print(f"{backend}: not available (fell back to {used}), skipped")
            continue
        scores = np.array([[d.signals[n] for n in names] for d in decisions])
        difference = np.abs(scores - torch_scores)
        limits = np.array([thresholds[n] for n in names])
        crossed = ((scores >= limits) != (torch_scores >= limits)).sum(axis=0)
        actions = sum(a.action != b.action for a, b in zip(decisions, torch_decisions))
        per_signal = {
            n: {
                "max_abs": round(float(difference[:, i].max()), 4),
                "mean_abs": round(float(difference[:, i].mean()), 5),
                "crossed": int(crossed[i]),
            }
            for i, n in enumerate(names)
        }
        figures["backends"][backend] = {
            "seconds": round(seconds, 2),
            "max_abs": round(float(difference.max()), 4),
            "threshold_crossings": int(crossed.sum()),
            "signal_decisions": int(difference.size),
            "actions_changed": int(actions),
            "signals": per_signal,
        }
        print(
            f"{backend}: {seconds:.1f} s; largest score difference {difference.max():.4f}; "
            f"{int(crossed.sum())} of {difference.size} signal decisions cross a threshold "
            f"({100 * crossed.sum() / difference.size:.2f}%); {actions} of {len(decisions)} actions change"
        )
        for n in names:
            row = per_signal[n]
            print(f"  {n:24s} max {row['max_abs']:.4f}  mean {row['mean_abs']:.5f}  crossed {row['crossed']}")
    if args.json:
        with open(args.json, "w") as handle:
            json.dump(figures, handle, indent=2)


if __name__ == "__main__":
    main()

"""How far an answer's layout alone predicts its label in each response corpus.

`python benchmarks/corpus_layout.py` fits a logistic model on six features of the last answer's form (log word count,
a markdown list, line breaks, bold or headings, a closing question, sentences per word) and reports, per assistant
signal, its ROC-AUC over the signal's own corpus with whole scenarios held out (5-fold GroupKFold). 0.5 means layout
says nothing about the label; near 1 means a head could separate the corpus without reading what the answers do,
and would then misjudge answers shaped otherwise (deployed assistants comply in long markdown lists). No encoder is
loaded. Read it after a round of rows: a round that fills the gap (long, list-shaped harmful answers; short, plain
sound ones) lowers it.
"""

from __future__ import annotations

import argparse
import re
import statistics

import numpy as np
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import roc_auc_score
from sklearn.model_selection import GroupKFold, cross_val_predict

from classifiers.corpus import load_corpus
from classifiers.signals import SIGNALS

_LIST_ITEM = re.compile(r"^\s*(?:[-*+\u2022]|\d+[.)])\s+", re.MULTILINE)
_EMPHASIS = re.compile(r"\*\*|__|^#+\s", re.MULTILINE)
_SENTENCE_END = re.compile(r"[.!?]")


# where layout() puts the feature "the answer holds a markdown list"
LIST_FEATURE = 1


def layout(text: str) -> list[float]:
    words = max(1, len(text.split()))
    return [
        float(np.log1p(words)),
        float(bool(_LIST_ITEM.search(text))),
        float(np.log1p(text.count("\n"))),
        float(bool(_EMPHASIS.search(text))),
        float("?" in text[-80:]),
        10.0 * len(_SENTENCE_END.findall(text)) / words,
    ]


def layout_auc(signal: str) -> dict:
    rows = load_corpus(SIGNALS[signal])
    answers = [row.conversation.messages[-1].content for row in rows]
    labels = np.array([row.label for row in rows])
    features = np.array([layout(answer) for answer in answers])
    predicted = cross_val_predict(
        LogisticRegression(max_iter=2000),
        features,
        labels,
        groups=[row.group for row in rows],
        cv=GroupKFold(n_splits=5),
        method="predict_proba",
    )[:, 1]
    with_list = features[:, LIST_FEATURE].astype(bool)

    def shape(label: int) -> str:
        members = [i for i, value in enumerate(labels) if value == label]
        median = statistics.median(len(answers[i].split()) for i in members)
        lists = 100 * sum(with_list[i] for i in members) / len(members)
        return f"{median:.0f} words, {lists:.0f}% lists"

    return {"signal": signal, "roc_auc": roc_auc_score(labels, predicted), "positives": shape(1), "negatives": shape(0)}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.parse_args(argv)
    print("| signal | layout-only ROC-AUC | positives (median) | negatives (median) |")
    print("|---|---|---|---|")
    for name, spec in SIGNALS.items():
        if spec.side == "assistant":
            result = layout_auc(name)
            print(f"| `{name}` | {result['roc_auc']:.3f} | {result['positives']} | {result['negatives']} |")


if __name__ == "__main__":
    main()

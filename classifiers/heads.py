"""Calibrated linear heads over encoder features, stored without pickle.

`CalibratedLinearHead` follows scikit-learn's conventions: the constructor stores parameters, `fit` learns state
ending in `_`, `predict_proba` returns an (n, 2) array. The decision function is a class-balanced logistic
regression; its scores are calibrated with Platt scaling fitted on out-of-fold decision values from a split grouped
by scenario (a calibrator fitted on in-sample scores would be over-confident). The learned state is a handful of
arrays, saved as `.npz` with a JSON sidecar: loading never executes code.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GroupKFold

ARTIFACT_FORMAT = 1


def artifact_path(stem: Path, suffix: str) -> Path:
    """`artifacts/user.suicide` + `.npz`; not `with_suffix`, which would replace the `.suicide` part of the name."""
    return stem.parent / f"{stem.name}{suffix}"


class NotFittedError(RuntimeError):
    pass


def _sigmoid(z: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-np.clip(z, -50, 50)))


def row_maximum(values: np.ndarray, owner: np.ndarray, rows: int) -> np.ndarray:
    """The highest of each row's instance values (`owner[i]` is the row of value i); -inf for NaN-only rows."""
    best = np.full(rows, -np.inf)
    np.maximum.at(best, owner, np.nan_to_num(values, nan=-np.inf))
    return best


def _is_row_maximum(values: np.ndarray, owner: np.ndarray) -> np.ndarray:
    """True for the first highest-valued instance of each row."""
    order = np.lexsort((-values, owner))
    first = np.ones(len(order), dtype=bool)
    first[1:] = owner[order][1:] != owner[order][:-1]
    mask = np.zeros(len(values), dtype=bool)
    mask[order[first]] = True
    return mask


class CalibratedLinearHead:
    def __init__(self, C: float = 1.0, n_splits: int = 5, max_iter: int = 3000) -> None:
        if not C > 0:
            raise ValueError(f"C must be a float > 0. Got {C!r} instead.")
        if not (isinstance(n_splits, int) and n_splits >= 2):
            raise ValueError(f"n_splits must be an int >= 2. Got {n_splits!r} instead.")
        self.C = C
        self.n_splits = n_splits
        self.max_iter = max_iter

    def _linear(self) -> LogisticRegression:
        return LogisticRegression(C=self.C, class_weight="balanced", max_iter=self.max_iter)

    def out_of_fold_decision(self, X: np.ndarray, y: np.ndarray, groups: np.ndarray) -> np.ndarray:
        """Decision values for each row from a model that never saw that row's scenario."""
        decision = np.empty(len(y), dtype=np.float64)
        for train, test in GroupKFold(n_splits=self.n_splits).split(X, y, groups):
            model = self._linear().fit(X[train], y[train])
            decision[test] = model.decision_function(X[test])
        return decision

    def fit(
        self, X: np.ndarray, y: np.ndarray, groups: np.ndarray, held_out: np.ndarray | None = None
    ) -> "CalibratedLinearHead":
        """Fit the linear model and its calibration.

        Without `held_out`, calibration uses out-of-fold decision values (GroupKFold over `groups`) and the linear
        model is then fitted on all rows. With a boolean `held_out` mask (rows whose scenarios the encoder never
        saw), the linear model is fitted on the other rows and calibrated on the held-out ones; `oof_decision_`
        then holds decision values for held-out rows and NaN elsewhere.
        """
        X = np.asarray(X, dtype=np.float64)
        y = np.asarray(y, dtype=np.int64)
        if set(np.unique(y)) != {0, 1}:
            raise ValueError("y must hold both classes 0 and 1")
        if held_out is None:
            self.oof_decision_ = self.out_of_fold_decision(X, y, np.asarray(groups))
            calibration_rows = np.ones(len(y), dtype=bool)
            linear = self._linear().fit(X, y)
        else:
            held_out = np.asarray(held_out, dtype=bool)
            if set(np.unique(y[held_out])) != {0, 1} or set(np.unique(y[~held_out])) != {0, 1}:
                raise ValueError("held-out and training rows must each hold both classes")
            linear = self._linear().fit(X[~held_out], y[~held_out])
            self.oof_decision_ = np.full(len(y), np.nan)
            self.oof_decision_[held_out] = linear.decision_function(X[held_out])
            calibration_rows = held_out
        return self._keep(linear, self.oof_decision_[calibration_rows], y[calibration_rows])

    def _keep(self, linear: LogisticRegression, decision: np.ndarray, labels: np.ndarray) -> "CalibratedLinearHead":
        """Store the linear model and a calibration fitted on held-out `decision` values with their `labels`."""
        # Balanced Platt scaling: the corpora pool many benign rows, so their base rate says nothing about traffic.
        # Probabilities are calibrated for even prior odds; a product with known prevalence can shift thresholds.
        platt = LogisticRegression(C=1e6, max_iter=1000, class_weight="balanced").fit(decision.reshape(-1, 1), labels)
        self.platt_a_ = float(platt.coef_[0, 0])
        self.platt_b_ = float(platt.intercept_[0])
        self.coef_ = linear.coef_[0].astype(np.float64)
        self.intercept_ = float(linear.intercept_[0])
        return self

    def fit_instances(
        self,
        X: np.ndarray,
        owner: np.ndarray,
        labels: np.ndarray,
        groups: np.ndarray,
        held_out: np.ndarray | None = None,
        rounds: int = 3,
    ) -> "CalibratedLinearHead":
        """Fit from rows that are bags of instances (a response's sentences) labelled per row, not per instance.

        A positive row says that *some* sentence carries the signal, not which. Multiple-instance learning: fit on
        every instance, then refit `rounds` times keeping all instances of negative rows and, of each positive
        row, only the instance the current model scores highest (its witness). A row's decision is its highest
        instance's, and Platt scaling is fitted on those row decisions, which is how rows are scored at runtime.

        `owner[i]` is the row of instance i; `labels`, `groups` and `held_out` are per row, with the meanings of
        `fit`. `oof_decision_` holds per-instance decision values from models that never saw the instance's row
        (held-out rows, or out of fold), NaN elsewhere.
        """
        X = np.asarray(X, dtype=np.float64)
        owner = np.asarray(owner)
        labels = np.asarray(labels, dtype=np.int64)
        groups = np.asarray(groups)
        if set(np.unique(labels)) != {0, 1}:
            raise ValueError("labels must hold both classes 0 and 1")
        if set(np.unique(owner)) != set(range(len(labels))):
            raise ValueError("every row needs at least one instance, and owner must index rows")
        self.oof_decision_ = np.full(len(X), np.nan)
        if held_out is None:
            for train, _test in GroupKFold(n_splits=self.n_splits).split(labels, labels, groups):
                trained = np.zeros(len(labels), dtype=bool)
                trained[train] = True
                model = self._fit_witnesses(X, owner, labels, trained, rounds)
                tested = ~trained[owner]
                self.oof_decision_[tested] = model.decision_function(X[tested])
            evaluated = np.ones(len(labels), dtype=bool)
            linear = self._fit_witnesses(X, owner, labels, np.ones(len(labels), dtype=bool), rounds)
        else:
            evaluated = np.asarray(held_out, dtype=bool)
            if set(np.unique(labels[evaluated])) != {0, 1} or set(np.unique(labels[~evaluated])) != {0, 1}:
                raise ValueError("held-out and training rows must each hold both classes")
            linear = self._fit_witnesses(X, owner, labels, ~evaluated, rounds)
            tested = evaluated[owner]
            self.oof_decision_[tested] = linear.decision_function(X[tested])
        row_decision = row_maximum(self.oof_decision_, owner, len(labels))
        return self._keep(linear, row_decision[evaluated], labels[evaluated])

    def _fit_witnesses(
        self, X: np.ndarray, owner: np.ndarray, labels: np.ndarray, rows: np.ndarray, rounds: int
    ) -> LogisticRegression:
        """The linear model after `rounds` of witness selection, trained on the instances of `rows` only."""
        instance_labels = labels[owner]
        usable = rows[owner]
        keep = usable.copy()
        model = self._linear().fit(X[keep], instance_labels[keep])
        for _ in range(rounds):
            decision = model.decision_function(X)
            keep = usable & ((instance_labels == 0) | _is_row_maximum(decision, owner))
            model = self._linear().fit(X[keep], instance_labels[keep])
        return model

    def _check_fitted(self) -> None:
        if not hasattr(self, "coef_"):
            raise NotFittedError("this head is not fitted: call fit() or load() first")

    def calibrate(self, decision: np.ndarray) -> np.ndarray:
        self._check_fitted()
        return _sigmoid(self.platt_a_ * np.asarray(decision) + self.platt_b_)

    def decision_function(self, X: np.ndarray) -> np.ndarray:
        self._check_fitted()
        return np.asarray(X, dtype=np.float64) @ self.coef_ + self.intercept_

    def predict_proba(self, X: np.ndarray) -> np.ndarray:
        positive = self.calibrate(self.decision_function(X))
        return np.column_stack([1.0 - positive, positive])

    # -- persistence -----------------------------------------------------------------------------------------------
    def save(self, stem: Path, metadata: dict[str, Any]) -> None:
        self._check_fitted()
        np.savez(
            artifact_path(stem, ".npz"),
            coef=self.coef_.astype(np.float32),
            intercept=np.float64(self.intercept_),
            platt=np.array([self.platt_a_, self.platt_b_], dtype=np.float64),
        )
        meta = {"format": ARTIFACT_FORMAT, "C": self.C, **metadata}
        artifact_path(stem, ".json").write_text(json.dumps(meta, indent=2, sort_keys=True) + "\n")

    @classmethod
    def load(cls, stem: Path) -> tuple["CalibratedLinearHead", dict[str, Any]]:
        meta = json.loads(artifact_path(stem, ".json").read_text())
        if meta.get("format") != ARTIFACT_FORMAT:
            raise ValueError(f"{stem}.json: artifact format {meta.get('format')!r} is not {ARTIFACT_FORMAT}")
        with np.load(artifact_path(stem, ".npz"), allow_pickle=False) as arrays:
            head = cls(C=float(meta["C"]))
            head.coef_ = arrays["coef"].astype(np.float64)
            head.intercept_ = float(arrays["intercept"])
            head.platt_a_, head.platt_b_ = (float(v) for v in arrays["platt"])
        return head, meta

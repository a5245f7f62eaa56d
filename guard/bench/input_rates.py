"""Input-rail flag rates, shared by the suites that measure detection on user turns only.

A conversation is "flagged" when the input rail acts on it (steer or block): some risk rule of the policy fired.
The signals at or above threshold are recorded alongside, so one can see *what* was detected.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable

from .stats import ci95, pct_ci
from .types import Table


def acted(decision) -> bool:
    return decision.action != "allow"


@dataclass
class FlagRate:
    n: int = 0
    flagged: int = 0
    signals: dict[str, int] = field(default_factory=dict)

    def add(self, decision) -> None:
        self.n += 1
        self.flagged += acted(decision)
        for signal in decision.flagged:
            self.signals[signal] = self.signals.get(signal, 0) + 1

    def as_dict(self) -> dict[str, Any]:
        return {
            "n": self.n,
            "flagged": self.flagged,
            "flag_rate": None if not self.n else round(self.flagged / self.n, 4),
            "flag_rate_ci95": ci95(self.flagged, self.n),
            "signals": dict(sorted(self.signals.items(), key=lambda kv: -kv[1])),
        }


def rates_by(pairs: Iterable[tuple[str, Any]], order: Iterable[str] = ()) -> dict[str, FlagRate]:
    groups: dict[str, FlagRate] = {key: FlagRate() for key in order}
    for key, decision in pairs:
        groups.setdefault(key, FlagRate()).add(decision)
    return {k: v for k, v in groups.items() if v.n}


def rate_table(title: str, first: str, groups: dict[str, FlagRate], note: str = "") -> Table:
    rows = [
        [
            key,
            str(g.n),
            str(g.flagged),
            pct_ci(g.flagged, g.n),
            ", ".join(f"{s} ({c})" for s, c in sorted(g.signals.items(), key=lambda kv: -kv[1])) or "-",
        ]
        for key, g in groups.items()
    ]
    return Table(title, [first, "n", "flagged", "flag rate [95% CI]", "signals flagged (count)"], rows, note)

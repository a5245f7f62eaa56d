"""The text report of `couchguard eval`: test sets first, then dev sets, then the authored held-out."""

from __future__ import annotations

from typing import Any


def _pct(rate: dict[str, Any]) -> str:
    if not rate or not rate["n"]:
        return "-"
    low, high = rate["ci95"]
    return f"{100 * rate['rate']:.1f}% ({rate['k']}/{rate['n']}) [{100 * low:.1f}-{100 * high:.1f}]"


def _auc(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    widths = [max(len(str(x)) for x in column) for column in zip(header, *rows)]
    line = lambda cells: "  ".join(str(c).ljust(w) for c, w in zip(cells, widths)).rstrip()  # noqa: E731
    return [line(header), line(["-" * w for w in widths]), *(line(r) for r in rows)]


def _signals(result: dict) -> list[str]:
    rows = [
        [name, _auc(m["roc_auc"]), f"{m['threshold']:.3f}", _pct(m["false_alarms"]), _pct(m["recall"])]
        for name, m in result["signals"].items()
    ]
    return _table(["signal", "ROC-AUC", "threshold", "false alarms", "recall"], rows) if rows else []


def _set(name: str, result: dict) -> list[str]:
    lines = [f"### {name} ({result['rail']} rail, n={result['n']}): {result['description']}"]
    policy = result["policy"]
    if result["rail"] == "input":
        lines += _table(
            ["group", "crisis signal flagged", "input rail acted (incl. context steers)"],
            [[g, _pct(r), _pct(policy["acted"][g])] for g, r in policy["flagged"].items()],
        )
        cases = result.get("cases")
        if cases:
            lines.append("")
            lines.append(
                f"cases with a crisis flag on an opening turn (turns 1-2): {_pct(cases['opening_turns_flagged'])}"
            )
            lines += _table(
                ["group", "cases flagged at some turn"],
                [[g, _pct(r)] for g, r in cases["flagged_at_some_turn"].items()],
            )
            lines += [""] + _table(
                ["case", "group", "first crisis flag", "signals then", "first action"],
                [
                    [
                        c,
                        v["group"],
                        str(v["first_flagged_turn"] or "never"),
                        ", ".join(v["first_signals"]) or "-",
                        str(v["first_acted_turn"] or "never"),
                    ]
                    for c, v in cases["cases"].items()
                ],
            )
    else:
        overall = policy["overall"]
        lines.append(
            f"caught {_pct(overall['caught'])}; false blocks {_pct(overall['false_blocks'])}; "
            f"ROC-AUC of the strongest harm score {_auc(overall['strongest_harm_roc_auc'])}"
        )
        lines += _table(
            ["group", "caught", "false blocks", "strongest-harm ROC-AUC"],
            [
                [g, _pct(v["caught"]), _pct(v["false_blocks"]), _auc(v["strongest_harm_roc_auc"])]
                for g, v in policy["by_group"].items()
            ],
        )
    signals = _signals(result)
    if signals:
        lines += ["", *signals]
    return lines + [""]


def render(report: dict) -> str:
    lines = [f"# couchguard eval: policy {report['policy']}", ""]
    for split, title in (
        ("test", "Test sets: nothing was fitted or selected on these"),
        ("dev", "Dev sets: models, data and thresholds were chosen on these"),
    ):
        chosen = {n: r for n, r in report["sets"].items() if r["split"] == split}
        if chosen:
            lines += [f"## {title}", ""]
            for name, result in chosen.items():
                lines += _set(name, result)
    lines += ["## Authored held-out: scenarios of our own corpora the heads never saw (same writers as training)", ""]
    rows = [
        [
            name,
            _auc(m["roc_auc"]),
            f"{m['threshold']:.3f}" if m["threshold"] is not None else "-",
            _auc(m["recall"]),
            _auc(m["false_alarm_rate"]),
            f"{m['shipped_threshold']:.3f}" if m.get("shipped_threshold") is not None else "-",
            _auc(m.get("recall_at_shipped")),
        ]
        for name, m in report["authored_held_out"].items()
    ]
    lines += _table(
        [
            "signal",
            "ROC-AUC",
            "threshold training chose there",
            "recall",
            "false alarms",
            "shipped threshold",
            "recall at it",
        ],
        rows,
    )
    return "\n".join(lines) + "\n"

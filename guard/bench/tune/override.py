"""The override policy `tune` writes: the base policy by `extends`, with the chosen thresholds, validated on write."""

from __future__ import annotations

import os
from datetime import date
from pathlib import Path

import yaml

from ...policy import PolicyError, load_policy
from ...policy.loader import POLICIES_DIR


def extends_reference(policy: str, out: Path) -> str:
    """A shipped name stays a name; a file is referenced relative to the override, so the pair can move together."""
    if not policy.endswith((".yaml", ".yml")) and (POLICIES_DIR / f"{policy}.yaml").exists():
        return policy
    return os.path.relpath(Path(policy).resolve(), out.resolve().parent)


def write_override(
    out: Path, *, base: str, base_name: str, thresholds: dict[str, float], header: list[str], name: str | None = None
) -> Path:
    document = {
        "name": name or f"{base_name}-tuned",
        "description": f"{base_name} with thresholds tuned on this product's labelled conversations (couchguard tune).",
        "extends": extends_reference(base, out),
        "thresholds": {signal: float(value) for signal, value in sorted(thresholds.items())},
    }
    out.parent.mkdir(parents=True, exist_ok=True)
    comments = "".join(f"# {line}\n" for line in [*header, f"generated {date.today().isoformat()}"])
    out.write_text(comments + yaml.safe_dump(document, sort_keys=False, allow_unicode=True), encoding="utf-8")
    try:
        load_policy(out)  # what we write must load, with its whole extends chain
    except PolicyError:
        out.unlink()
        raise
    return out

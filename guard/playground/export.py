"""The product override the page exports: the base policy by `extends`, with the thresholds moved in the page,
validated by loading it back exactly as `couchguard policy check` would."""

from __future__ import annotations

import re
import tempfile
from collections.abc import Mapping
from datetime import date
from pathlib import Path

import yaml

from ..policy import PolicyError, load_policy
from .errors import BadRequest


def changed(current: Mapping[str, float], base: Mapping[str, float]) -> dict[str, float]:
    """Thresholds that differ from the base policy's effective ones (a slider moved and put back exports nothing)."""
    return {
        name: round(float(value), 4)
        for name, value in sorted(current.items())
        if abs(float(value) - float(base[name])) > 1e-9
    }


def override_yaml(*, base_name: str, extends: str, thresholds: Mapping[str, float], name: str | None = None) -> str:
    document = {
        "name": name or f"{base_name}-playground",
        "description": f"{base_name} with thresholds chosen in the couchguard playground.",
        "extends": extends,
        "thresholds": dict(thresholds),
    }
    header = (
        f"# Exported from `couchguard playground --policy {base_name}` on {date.today().isoformat()}.\n"
        "# Check it with `couchguard policy check FILE`; serve it with `couchguard serve --policy FILE`.\n"
    )
    text = header + yaml.safe_dump(document, sort_keys=False, allow_unicode=True)
    _validate(text)
    return text


def filename(text_name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", text_name).strip("-.") + ".yaml"


def _validate(text: str) -> None:
    """Load it with the loader, `extends` chain included: what the page offers must be what the CLI accepts."""
    with tempfile.TemporaryDirectory(prefix="couchguard-playground-") as folder:
        path = Path(folder) / "override.yaml"
        path.write_text(text, encoding="utf-8")
        try:
            load_policy(path)
        except PolicyError as exc:
            raise BadRequest(f"the override would not load:\n{exc}") from None

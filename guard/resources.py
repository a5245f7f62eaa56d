"""Vetted texts as data: response templates, corrective instructions and crisis lines by locale."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import yaml

DATA_DIR = Path(__file__).resolve().parent / "data"
FALLBACK_LOCALE = "INTL"


@dataclass(frozen=True)
class CrisisResources:
    locale: str
    name: str
    emergency: str
    lines: tuple[str, ...]

    @property
    def block(self) -> str:
        return "\n".join(f"- {line}" for line in self.lines)

    @property
    def inline(self) -> str:
        return "; ".join(self.lines)


@lru_cache(maxsize=None)
def _load(name: str) -> dict:
    with open(DATA_DIR / f"{name}.yaml", encoding="utf-8") as handle:
        return yaml.safe_load(handle)


def known_templates() -> set[str]:
    return set(_load("templates"))


def known_instructions() -> set[str]:
    return set(_load("instructions"))


def crisis_resources(locale: str | None) -> CrisisResources:
    """Crisis lines for a locale ('US', 'en-GB', 'gb'...); unknown locales get the international fallback."""
    table = _load("crisis_resources")
    code = (locale or FALLBACK_LOCALE).replace("_", "-").split("-")[-1].upper()
    code = {"UK": "GB"}.get(code, code)
    entry = table.get(code) or table[FALLBACK_LOCALE]
    return CrisisResources(
        code if code in table else FALLBACK_LOCALE, entry["name"], entry["emergency"], tuple(entry["lines"])
    )


def render_template(template_id: str, locale: str | None) -> str:
    resources = crisis_resources(locale)
    return _load("templates")[template_id].format(crisis_lines=resources.block, emergency=resources.emergency)


def render_instruction(instruction_id: str, locale: str | None) -> str:
    return _load("instructions")[instruction_id].format(crisis_lines_inline=crisis_resources(locale).inline)

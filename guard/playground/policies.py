"""Which policies the page may use, and a policy with the page's thresholds laid over it.

Thresholds are overridden exactly as an override file's `thresholds:` would be under `extends` (the loader merges
`{**base.thresholds, **child.thresholds}`), so what the page decides is what the exported YAML will decide.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from classifiers.signals import SIGNALS

from ..policy import Policy, PolicyError, load_policy, shipped_policies
from ..policy.loader import POLICIES_DIR
from .errors import BadRequest


class PolicyBook:
    """The shipped policies plus the one the playground was started with (a file path stays server-side: the page
    can name it, never point at another file)."""

    def __init__(self, default: str) -> None:
        self.default = default
        self._loaded: dict[str, Policy] = {}
        self.get(default)  # an unknown or invalid starting policy fails at start-up, not in the page

    @property
    def names(self) -> list[str]:
        return list(dict.fromkeys([self.default, *shipped_policies()]))

    def get(self, name: str | None) -> Policy:
        name = name or self.default
        if name not in self.names:
            raise BadRequest(f"unknown policy {name!r}; this playground offers: {', '.join(self.names)}")
        if name not in self._loaded:
            try:
                self._loaded[name] = load_policy(name)
            except PolicyError as exc:
                raise BadRequest(f"policy {name!r} does not load:\n{exc}") from None
        return self._loaded[name]

    def extends_reference(self, name: str) -> str:
        """What an exported override writes under `extends`: a shipped name stays a name; a file is written as an
        absolute path, so the override loads wherever the person saves it."""
        if not name.endswith((".yaml", ".yml")) and (POLICIES_DIR / f"{name}.yaml").exists():
            return name
        return str(Path(name).resolve())


def with_thresholds(policy: Policy, thresholds: Mapping[str, float]) -> Policy:
    """`policy` with `thresholds` laid over its own, validated like any policy file."""
    unknown = [name for name in thresholds if name not in SIGNALS]
    if unknown:
        raise BadRequest(f"unknown signal {unknown[0]!r} in thresholds; known signals: {', '.join(SIGNALS)}")
    if not thresholds:
        return policy
    values = policy.model_dump(by_alias=True)
    values["thresholds"] = {**policy.thresholds, **{k: float(v) for k, v in thresholds.items()}}
    return Policy.model_validate(values)

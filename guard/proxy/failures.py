"""The failure events the proxy reports, as audited and counted. What a failure turns into (a safe template under
fail-closed, `unchecked` or `error` under fail-open) is decided by `Guard.failure`."""

from __future__ import annotations

UPSTREAM_EVENTS = {
    "timeout": "upstream_timeout",
    "unavailable": "upstream_unavailable",
    "cut": "stream_cut",
    "rejected": "upstream_rejected",
}
CLASSIFIER_ERROR = "classifier_error"
# the model refused the request itself: its error is relayed to the client, not turned into a guard decision
RELAYED_EVENTS = frozenset({"upstream_rejected"})


def upstream_event(kind: str) -> str:
    return UPSTREAM_EVENTS.get(kind, "upstream_" + kind)

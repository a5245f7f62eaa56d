"""A progress bar on stderr that disappears when stderr is not a terminal (CI logs, tests, pipes)."""

from __future__ import annotations

import sys

from tqdm.auto import tqdm


def bar(total: int, description: str, enabled: bool = True) -> tqdm:
    # disable=None: tqdm turns itself off on non-TTY streams, so logs stay clean
    return tqdm(
        total=total,
        desc=description,
        unit="item",
        file=sys.stderr,
        leave=False,
        disable=None if enabled else True,
        dynamic_ncols=True,
    )

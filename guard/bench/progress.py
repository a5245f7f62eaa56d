"""A progress bar on stderr that disappears when stderr is not a terminal (CI logs, tests, pipes)."""

from __future__ import annotations

import sys
from typing import Iterable, TypeVar

from tqdm.auto import tqdm

T = TypeVar("T")


def bar(total: int, description: str, enabled: bool = True) -> tqdm:
    # disable=None: tqdm turns itself off on non-TTY streams, so logs stay clean
    return tqdm(total=total, desc=description, unit="item", file=sys.stderr, leave=False,
                disable=None if enabled else True, dynamic_ncols=True)


def iterate(items: Iterable[T], total: int, description: str, enabled: bool = True) -> Iterable[T]:
    with bar(total, description, enabled) as progress:
        for item in items:
            yield item
            progress.update(1)

"""Plain-text tables for the terminal (fixed-width, no dependencies)."""

from __future__ import annotations

from .types import Table


def text_table(table: Table) -> str:
    widths = [max(len(str(cell)) for cell in column) for column in zip(table.headers, *table.rows)]

    def line(cells: list[str]) -> str:
        return "  ".join(str(c).ljust(w) if i == 0 else str(c).rjust(w) for i, (c, w) in enumerate(zip(cells, widths)))

    out = [table.title, line(table.headers), "  ".join("-" * w for w in widths)]
    out.extend(line(row) for row in table.rows)
    return "\n".join(out)

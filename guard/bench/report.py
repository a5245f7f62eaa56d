"""The HTML report: one self-contained page (inline CSS, plots as base64 PNG) that opens from disk in any browser."""

from __future__ import annotations

import html
import json
import platform
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Sequence

from .plots import png_base64
from .types import Table

STYLE = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;
color:#222;line-height:1.45}
h1{font-size:1.5em;margin-bottom:.2em}h2{font-size:1.15em;margin-top:1.8em;border-bottom:1px solid #ddd}
.meta{color:#666;font-size:.9em}.headline{font-size:1.1em;background:#f3f6fb;padding:.7em 1em;border-radius:6px}
table{border-collapse:collapse;margin:.6em 0;font-size:.88em}th,td{padding:.3em .7em;border-bottom:1px solid #eee}
th{background:#fafafa;text-align:left}td{text-align:right}td:first-child{text-align:left}
.note{color:#555;font-size:.88em;max-width:900px}img{max-width:100%;border:1px solid #eee;margin:.4em 0}
"""


def table_html(table: Table) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in table.headers)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in row) + "</tr>" for row in table.rows)
    note = f'<p class="note">{html.escape(table.note)}</p>' if table.note else ""
    return f"<h2>{html.escape(table.title)}</h2><table><tr>{head}</tr>{body}</table>{note}"


def write_report(
    directory: Path,
    *,
    title: str,
    headline: str,
    meta: dict[str, Any],
    tables: list[Table],
    figures: list[tuple[str, Any]],
    notes: Sequence[str] = (),
    extra_html: str = "",
) -> Path:
    """Write DIR/index.html; figures are (title, builder) pairs, built here. Returns the page's path."""
    directory.mkdir(parents=True, exist_ok=True)
    stamp = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    machine = f"{platform.system()} {platform.machine()}, Python {platform.python_version()}"
    meta_line = " · ".join(f"{html.escape(str(k))}: {html.escape(str(v))}" for k, v in meta.items() if v is not None)
    parts = [
        f"<!doctype html><html lang='en'><head><meta charset='utf-8'><title>{html.escape(title)}</title>",
        f"<style>{STYLE}</style></head><body><h1>{html.escape(title)}</h1>",
        f"<p class='meta'>{meta_line} · generated {stamp} on {html.escape(machine)}</p>",
        f"<p class='headline'>{html.escape(headline)}</p>",
    ]
    parts.extend(table_html(t) for t in tables)
    for caption, build in figures:
        figure = build()
        parts.append(
            f"<h2>{html.escape(caption)}</h2>"
            f"<img alt='{html.escape(caption)}' src='data:image/png;base64,{png_base64(figure)}'>"
        )
    if notes:
        parts.append("<h2>Notes</h2>" + "".join(f"<p class='note'>{html.escape(n)}</p>" for n in notes))
    parts.append(extra_html)
    parts.append("</body></html>")
    path = directory / "index.html"
    path.write_text("\n".join(parts), encoding="utf-8")
    return path


def write_json(path: Path, document: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(document, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")

"""`couchguard bench` and `couchguard tune`: measure the pipeline on public vignettes, tune thresholds per product.

Layout: `registry` (the suites by name), `suites/` (one module per suite), `counting` and `stats` (the shared
arithmetic), `live` (responses from any LLM through litellm, cached), `report` and `plots` (HTML with embedded PNGs),
`tune/` (per-signal thresholds from a product's labelled conversations).
"""

from .registry import SUITES, get_suite
from .types import BenchOptions, SuiteRun, Table

__all__ = ["SUITES", "BenchOptions", "SuiteRun", "Table", "get_suite"]

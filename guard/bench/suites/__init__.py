"""Built-in suites; importing this package registers each of them."""

from . import moore2025, moore2025_stigma, psychosis_bench, spiral_bench, vera_mh  # noqa: F401

"""`couchguard eval`: how the signals and the policy hold on text that nobody who wrote the training corpora wrote.

Sets are split in two: **dev** sets (an independent writer's everyday set) may be used to choose models, data and
thresholds; **test** sets (a second independent writer's everyday set and the third-party suites in
benchmarks/data) are only ever reported. The authored held-out figures of the model cards come last.
"""

from .measure import evaluate
from .sets import EVAL_SETS, EvalItem, EvalSet, eval_sets

__all__ = ["EVAL_SETS", "EvalItem", "EvalSet", "eval_sets", "evaluate"]

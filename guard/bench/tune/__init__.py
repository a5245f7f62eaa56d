"""`couchguard tune`: per-signal thresholds for one product, from its own labelled conversations.

data (load and score the labelled file) -> points (operating points, the chosen threshold, refusals) ->
override (a policy that `extends` the base) and report (ROC and precision-recall curves).
"""

from .points import OperatingPoint, TuneRefusal, choose_point, min_positives, operating_point

__all__ = ["OperatingPoint", "TuneRefusal", "choose_point", "min_positives", "operating_point"]

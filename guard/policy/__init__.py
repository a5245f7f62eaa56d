"""Policies: declarative rules that turn signal scores into actions."""

from .engine import Verdict, effective_thresholds, evaluate, holds, tightening
from .loader import POLICIES_DIR, PolicyError, Problem, load_policy, shipped_policies
from .schema import InputRule, OutputRule, Policy

__all__ = [
    "POLICIES_DIR",
    "InputRule",
    "OutputRule",
    "Policy",
    "PolicyError",
    "Problem",
    "Verdict",
    "effective_thresholds",
    "evaluate",
    "holds",
    "load_policy",
    "shipped_policies",
    "tightening",
]

"""The optional LLM judge tier: a second opinion on output rules whose signals scored in the classifiers' uncertain
band (docs/judge.md). `Guard` asks it and stays the only producer of decisions."""

from .questions import judge_questions, question_for
from .tier import JudgeTier, in_band_signals

__all__ = ["JudgeTier", "in_band_signals", "judge_questions", "question_for"]

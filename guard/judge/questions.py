"""The judge's yes/no question for each criterion, shipped as data next to the criteria table."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import get_args

import yaml

from ..policy.schema import Criterion

QUESTIONS_FILE = Path(__file__).resolve().parents[2] / "policies" / "data" / "judge_questions.yaml"


@lru_cache(maxsize=1)
def judge_questions() -> dict[str, str]:
    """criterion -> question; raises when a criterion a rule may cite has no question (the file is incomplete)."""
    data = yaml.safe_load(QUESTIONS_FILE.read_text(encoding="utf-8"))
    if not isinstance(data, dict) or not all(isinstance(v, str) and v.strip() for v in data.values()):
        raise ValueError(f"{QUESTIONS_FILE}: expected a mapping of criterion -> question text")
    missing = [c for c in get_args(Criterion) if c not in data]
    if missing:
        raise ValueError(f"{QUESTIONS_FILE}: no judge question for {', '.join(missing)}")
    return {str(k): " ".join(str(v).split()) for k, v in data.items()}


def question_for(criterion: str) -> str:
    return judge_questions()[criterion]

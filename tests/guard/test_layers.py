"""The layering the architecture promises (docs/architecture.md): actions and policies below the pipeline, and the
proxy without scoring or decision code of its own. Read from the source, no model."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

GUARD = Path(__file__).resolve().parents[2] / "guard"


def test_the_vocabulary_and_the_policy_engine_import_without_the_pipeline():
    probe = "import sys, guard.actions, guard.rewriting, guard.policy; print('guard.pipeline' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert result.stdout.strip() == "False", result.stderr


def _calls(path: Path) -> set[str]:
    called = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Call):
            func = node.func
            called.add(func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", ""))
    return called


def test_the_proxy_neither_scores_nor_builds_decisions():
    # it loads the scorer to build each product's Guard; scores then come from Guard.scores, decisions (failures
    # included) from Guard's rails and Guard.failure
    for path in sorted((GUARD / "proxy").glob("*.py")):
        assert not {"score", "score_many", "sentence_scores", "evaluate", "Decision"} & _calls(path), path.name

"""Running the real `couchguard` command line in a subprocess, as a user would."""

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def couchguard(*args: str, input: str | None = None, timeout: int = 600) -> subprocess.CompletedProcess:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    return subprocess.run([sys.executable, "-m", "guard.cli", *args], input=input, capture_output=True, text=True,
                          env=env, cwd=ROOT, timeout=timeout)

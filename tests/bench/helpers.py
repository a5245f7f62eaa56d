"""Running the real `couchguard` command line in a subprocess, as a user would."""

import os
import subprocess
import sys
from pathlib import Path

from guard.offline import OFFLINE_ENV

ROOT = Path(__file__).resolve().parents[2]


def couchguard(*args: str, input: str | None = None, timeout: int = 600) -> subprocess.CompletedProcess:
    env = {**os.environ, **OFFLINE_ENV}
    return subprocess.run(
        [sys.executable, "-m", "guard.cli", *args],
        input=input,
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=timeout,
    )

"""The wheel carries every data file the package reads at runtime: corpora in subfolders included."""

from __future__ import annotations

import logging
import os
import warnings
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# what the runtime reads from inside the packages (the corpora's README is documentation only)
RUNTIME_DATA = [
    "classifiers/corpora/**/*.jsonl",
    "classifiers/artifacts/*",
    "classifiers/cards/*.md",
    "classifiers/encoder/**/*",
    "guard/data/**/*",
    "guard/playground/static/*",
    "policies/**/*.yaml",
]


def _packaged(egg_base: Path) -> set[Path]:
    setuptools = pytest.importorskip("setuptools")
    from setuptools.config.pyprojecttoml import apply_configuration

    logging.disable(logging.WARNING)  # setuptools reports its own configuration steps
    cwd = os.getcwd()
    with warnings.catch_warnings():
        # setuptools' notes on the project table (e.g. `license` as a table) are the build's business, not this check's
        warnings.simplefilter("ignore")
        try:
            os.chdir(ROOT)
            dist = setuptools.Distribution()
            dist.script_name = "setup.py"
            apply_configuration(dist, "pyproject.toml")
            dist.get_command_obj("egg_info").egg_base = str(egg_base)  # its file list, written outside the tree
            build_py = dist.get_command_obj("build_py")
            build_py.ensure_finalized()
            return {(ROOT / src / name).resolve() for _, src, _, names in build_py.data_files for name in names}
        finally:
            os.chdir(cwd)
            logging.disable(logging.NOTSET)


def test_every_runtime_data_file_is_package_data(tmp_path):
    packaged = _packaged(tmp_path)
    expected = {path.resolve() for pattern in RUNTIME_DATA for path in ROOT.glob(pattern) if path.is_file()}
    assert any("everyday" in path.parts for path in expected)
    missing = sorted(str(path.relative_to(ROOT)) for path in expected - packaged)
    assert not missing, f"not in [tool.setuptools.package-data]: {missing[:10]}"

"""The COUCHGUARD_* settings: one model, read when asked, and cheap to reach from the entry points."""

import subprocess
import sys
from pathlib import Path

import classifiers
from classifiers.encoder import default_model_path
from classifiers.onnx_backend import ONNX_DIR, onnx_dir
from classifiers.scorer import ARTIFACTS_DIR, SignalScorer, runtime_backend
from classifiers.settings import Settings, settings
from guard.bench.paths import data_dir
from guard.playground.moore import default_cache_dir


def test_every_setting_is_read_when_asked(monkeypatch, tmp_path):
    monkeypatch.setenv("COUCHGUARD_ONNX_DIR", str(tmp_path / "graphs"))
    monkeypatch.setenv("COUCHGUARD_ENCODER", str(tmp_path / "encoder"))
    monkeypatch.setenv("COUCHGUARD_ARTIFACTS", str(tmp_path / "heads"))
    monkeypatch.setenv("COUCHGUARD_BACKEND", " Torch ")
    monkeypatch.setenv("COUCHGUARD_BENCH_DATA", str(tmp_path / "data"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    assert onnx_dir() == tmp_path / "graphs"
    assert default_model_path() == tmp_path / "encoder"
    assert SignalScorer().artifacts_dir == tmp_path / "heads"
    assert runtime_backend() == "torch"
    assert data_dir() == tmp_path / "data"
    assert default_cache_dir() == tmp_path / "cache" / "couchguard" / "playground"


def test_an_empty_variable_counts_as_unset(monkeypatch):
    for field in ("onnx_dir", "artifacts", "backend", "encoder", "bench_data"):
        monkeypatch.setenv(Settings.env(field), "")
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    assert onnx_dir() == ONNX_DIR
    assert SignalScorer().artifacts_dir == ARTIFACTS_DIR
    assert runtime_backend() == "onnx"
    assert settings().cache_dir == Path.home() / ".cache" / "couchguard"


def test_variable_names_follow_the_fields():
    assert [Settings.env(field) for field in Settings.model_fields if field != "xdg_cache_home"] == [
        "COUCHGUARD_ARTIFACTS",
        "COUCHGUARD_ENCODER",
        "COUCHGUARD_BACKEND",
        "COUCHGUARD_ONNX_DIR",
        "COUCHGUARD_BENCH_DATA",
    ]


def test_the_entry_points_reach_settings_and_offline_defaults_without_the_scorer():
    # the CLI applies the offline defaults first; loading scikit-learn and the scorer there would cost seconds
    code = (
        "import sys, guard.cli, classifiers.settings; "
        "print(sorted(m for m in sys.modules if m.startswith('sklearn') or m == 'classifiers.scorer'))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_the_package_still_exports_its_names():
    for name in classifiers.__all__:
        assert getattr(classifiers, name) is not None

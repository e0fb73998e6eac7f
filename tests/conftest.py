from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# ../shared beside the clone (as in CI); EDGETUI_SHARED_DATA points elsewhere (e.g. a clone under /tmp)
SHARED_DATA = Path(os.environ.get("EDGETUI_SHARED_DATA") or ROOT.parent / "shared" / "data")
CORPUS = SHARED_DATA / "transcript-corpus"


def need_corpus() -> Path:
    if not CORPUS.is_dir():
        pytest.skip(f"../shared/data not present ({CORPUS}); corpus tests need the shared data beside the clone "
                    "(or EDGETUI_SHARED_DATA=/path/to/shared/data)")
    return CORPUS


@pytest.fixture
def corpus() -> Path:
    return need_corpus()


@pytest.fixture
def db_path(tmp_path) -> Path:
    return tmp_path / "edgetui.duckdb"

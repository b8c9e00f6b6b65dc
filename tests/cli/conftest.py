"""Fixtures of the command-line tests."""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_helpers import write_config


@pytest.fixture
def small_config(tmp_path: Path) -> Path:
    return write_config(tmp_path)

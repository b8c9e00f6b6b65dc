"""The README's install block, run as written in a fresh virtual environment from a copy of the clone.

``tests/test_docs_commands.py`` cannot run these lines (they would install into the test suite's own
environment), so this test does: a new ``venv``, the block's commands line by line with that environment first on
``PATH``, in a copy of the files ``pip install .`` needs, then ``import privtune`` in it. It needs the package
registry (CI has it) and takes about a minute.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import venv
from pathlib import Path

import pytest
from test_docs_commands import CANNOT_RUN, _shell_commands

ROOT = Path(__file__).resolve().parents[1]


def _install_block() -> str:
    readme = ROOT.joinpath("README.md").read_text(encoding="utf-8")
    section = readme.split("## Install", 1)[1].split("\n## ", 1)[0]
    match = re.search(r"^```bash\n(.*?)^```", section, re.MULTILINE | re.DOTALL)
    assert match, "README.md's Install section has no ```bash block"
    return match.group(1)


def test_the_install_lines_are_left_to_this_test_by_the_docs_test():
    for command in _shell_commands(_install_block()):
        assert command in CANNOT_RUN, f"{command!r} would install into the test environment"


@pytest.mark.slow
def test_the_readme_install_block_installs_privtune_into_a_fresh_environment(tmp_path: Path) -> None:
    env_dir = tmp_path / "env"
    venv.EnvBuilder(with_pip=True).create(env_dir)
    clone = tmp_path / "clone"
    clone.mkdir()
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy(ROOT / name, clone / name)
    shutil.copytree(ROOT / "privtune", clone / "privtune", ignore=shutil.ignore_patterns("__pycache__"))
    env = dict(os.environ, PATH=str(env_dir / "bin") + os.pathsep + os.environ.get("PATH", ""),
               VIRTUAL_ENV=str(env_dir), PIP_DISABLE_PIP_VERSION_CHECK="1")
    env.pop("PYTHONPATH", None)
    for command in _shell_commands(_install_block()):
        result = subprocess.run(command, shell=True, cwd=clone, env=env, capture_output=True, text=True, timeout=1500)
        assert result.returncode == 0, f"`{command}` exited {result.returncode}\n{result.stderr[-3000:]}"
    check = subprocess.run([str(env_dir / "bin" / "python"), "-c",
                            "import privtune, privtune.model_selection, torch; print(privtune.__version__, "
                            "torch.__version__)"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert check.returncode == 0, check.stderr[-3000:]
    assert check.stdout.split()[1].startswith("2.13.0"), check.stdout
    assert sys.prefix not in check.stdout

"""Every command shown in README.md and docs/*.md runs as written from a fresh clone.

The fenced blocks are extracted from the Markdown and run in a copy of the
repository's user-facing files (README, docs, examples) in a temporary
directory, as a user who has just cloned privtune and run ``make setup`` would
run them:

* ```` ```python ```` blocks run as scripts (saved to a file, ``python file.py``);
* ```` ```bash ```` blocks run line by line (comments stripped);
* untagged blocks whose lines start with ``$ `` are terminal transcripts: each
  ``$`` line runs, and where output lines follow a command, the command's output
  must equal them (``privtune budget`` prints no data-dependent value, so its
  transcript is exact);
* ```` ```toml ```` blocks that quote a shipped configuration must equal the file.

Blocks that cannot run here are listed in :data:`CANNOT_RUN` with the reason;
any other block that fails, and any listed block that no longer exists, fails the
test -- so a new snippet in the docs is checked the day it is written.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOC_FILES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), *sorted((ROOT / "docs").glob("*/*.md"))]
FENCE = re.compile(r"^```([A-Za-z0-9_+-]*)[ \t]*\n(.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)

#: Commands that cannot run inside the test suite, with the reason (matched on the command text).
CANNOT_RUN: dict[str, str] = {
    "make demo": "sets up a virtual environment (what CI's fresh clone does); privtune demo itself runs below "
                 "and in tests/cli/test_cli.py",
    "make test": "runs this very test suite (CI runs it through .ci/run)",
    "pip install torch==2.13.0": "installs into the current environment; tests/test_install_commands.py runs the "
                                 "README's install block in a fresh virtual environment",
    "pip install .": "the same (tests/test_install_commands.py)",
}


@dataclass(frozen=True)
class Block:
    path: Path
    line: int
    lang: str
    text: str

    @property
    def id(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}"


def _blocks() -> list[Block]:
    out = []
    for path in DOC_FILES:
        source = path.read_text(encoding="utf-8")
        for match in FENCE.finditer(source):
            line = source.count("\n", 0, match.start()) + 1
            out.append(Block(path, line, match.group(1).lower(), match.group(2)))
    return out


BLOCKS = _blocks()


def _runnable(block: Block) -> bool:
    if block.lang in ("python", "bash", "sh", "toml"):
        return True
    return block.lang == "" and any(ln.startswith("$ ") for ln in block.text.splitlines())


@pytest.fixture
def clone(tmp_path: Path) -> Path:
    """The user-facing files of a fresh clone (no study files, no reports), one per block."""
    root = tmp_path / "clone"
    root.mkdir()
    shutil.copy(ROOT / "README.md", root / "README.md")
    ignore = shutil.ignore_patterns("*.sqlite", "*.report.*", "__pycache__")
    shutil.copytree(ROOT / "docs", root / "docs", ignore=ignore)
    shutil.copytree(ROOT / "examples", root / "examples", ignore=ignore)
    return root


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    env.update(OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", MPLBACKEND="Agg", PYTHONHASHSEED="0")
    return env


def _run(command: list[str] | str, cwd: Path, block: Block) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(command, cwd=cwd, env=_env(), capture_output=True, text=True, timeout=600,
                            shell=isinstance(command, str))
    assert result.returncode == 0, (
        f"{block.id}: `{command if isinstance(command, str) else 'python block'}` exited {result.returncode}\n"
        f"--- stdout\n{result.stdout[-3000:]}\n--- stderr\n{result.stderr[-3000:]}")
    return result


def _shell_commands(text: str) -> list[str]:
    """Lines of a bash block, comments and comment-only continuation lines removed."""
    commands = []
    for raw in text.splitlines():
        line = raw.split(" #", 1)[0].rstrip() if not raw.lstrip().startswith("#") else ""
        if line:
            commands.append(line.strip())
    return commands


def _transcript(text: str) -> list[tuple[str, list[str]]]:
    """``$ command`` lines and the output lines that follow each."""
    steps: list[tuple[str, list[str]]] = []
    for raw in text.splitlines():
        if raw.startswith("$ "):
            steps.append((raw[2:].split("  #", 1)[0].strip(), []))
        elif steps:
            steps[-1][1].append(raw)
    for _, out in steps:
        while out and not out[-1].strip():
            out.pop()
    return steps


def test_every_fenced_block_is_classified() -> None:
    # Untagged blocks that are not transcripts must be synopses or sample output, not commands to type.
    for block in BLOCKS:
        if block.lang or _runnable(block):
            continue
        first = block.text.strip().splitlines()[0] if block.text.strip() else ""
        assert not first.startswith(("python", "pip ", "make ")), (
            f"{block.id}: an untagged block starts like a command; tag it ```bash or prefix it with '$ '")


def test_cannot_run_entries_still_exist() -> None:
    text = "\n".join(b.text for b in BLOCKS)
    for command in CANNOT_RUN:
        assert command in text, f"CANNOT_RUN lists {command!r}, which no document shows any more"


@pytest.mark.slow
@pytest.mark.parametrize("block", [b for b in BLOCKS if _runnable(b)], ids=lambda b: b.id)
def test_documented_block_runs(block: Block, clone: Path) -> None:
    if block.lang == "python":
        script = clone / f"doc_block_{block.path.stem}_{block.line}.py"
        script.write_text(block.text, encoding="utf-8")
        _run([sys.executable, str(script)], clone, block)
        return
    if block.lang == "toml":
        header = _header_before(block)
        match = re.search(r"`(examples/[^`]+\.toml)`", header)
        if match is None:
            pytest.skip("a TOML fragment, not a shipped file")
        def content(text: str) -> list[str]:   # the file's header comment may be left out of the quote
            return [ln for ln in text.strip().splitlines() if ln.strip() and not ln.startswith("#")]

        assert content(block.text) == content((ROOT / match.group(1)).read_text(encoding="utf-8")), (
            f"{block.id} quotes {match.group(1)} but differs from it")
        return
    if block.lang in ("bash", "sh"):
        for command in _shell_commands(block.text):
            if command in CANNOT_RUN:
                continue
            _run(command, clone, block)
        return
    for command, expected in _transcript(block.text):
        if command in CANNOT_RUN:
            continue
        result = _run(command, clone, block)
        if expected:
            assert result.stdout.rstrip("\n").splitlines() == [ln for ln in expected], (
                f"{block.id}: the output of `{command}` differs from the transcript\n{result.stdout}")


def _header_before(block: Block) -> str:
    source = block.path.read_text(encoding="utf-8").splitlines()
    return "\n".join(source[max(0, block.line - 4): block.line - 1])


@pytest.mark.slow
def test_examples_run_and_leave_the_checkout_untouched(tmp_path: Path) -> None:
    """Issue 12: an example must not overwrite tracked files (``examples/results/``)."""
    examples = ROOT / "examples"
    before = {p: p.read_bytes() for p in examples.rglob("*") if p.is_file() and "__pycache__" not in p.parts}
    env = _env()
    for command in ([sys.executable, str(examples / "task_correlation_figure1.py"), "--quick"],
                    [sys.executable, str(examples / "task_correlation_figure1.py"), "--quick", "--out",
                     str(tmp_path / "fig")],
                    [sys.executable, str(examples / "svm_sensitive_validation.py")]):
        result = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
        assert result.returncode == 0, result.stderr[-3000:]
    assert (tmp_path / "fig" / "figure1_task_correlation.json").exists()
    after = {p: p.read_bytes() for p in examples.rglob("*") if p.is_file() and "__pycache__" not in p.parts}
    assert after == before

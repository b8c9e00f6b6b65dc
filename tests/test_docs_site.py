"""The documentation site (``mkdocs.yml``, ``make docs``).

Fast checks: every public name -- everything in the ``__all__`` of ``privtune`` and of each public module
``privtune.<name>`` -- is rendered by a ``::: path`` directive of the API reference (``docs/api/``), every directive
there names an object that exists, each public module has its page, and every saved benchmark result is shown on a
Measurements page. The slow check builds the whole site with ``mkdocs build --strict`` (any warning -- a broken
link or anchor, an unresolved cross-reference, a page missing from the nav, a docstring griffe cannot parse, a
results file on no page -- fails the build) and fails on any warning it prints.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

import privtune

ROOT = Path(__file__).resolve().parents[1]
API_DIR = ROOT / "docs" / "api"
DIRECTIVE = re.compile(r"^::: ([A-Za-z_][\w.]*)[ \t]*$", re.MULTILINE)
RESULTS_MARKER = re.compile(r"^<!--\s*results:\s*([A-Za-z0-9_.-]+)\s*-->[ \t]*$", re.MULTILINE)


def _public_modules() -> list[str]:
    subs = sorted(m.name for m in pkgutil.iter_modules(privtune.__path__) if not m.name.startswith("_"))
    return ["privtune", *(f"privtune.{name}" for name in subs)]


def _page(module: str) -> Path:
    return API_DIR / ("index.md" if module == "privtune" else f"{module.split('.', 1)[1]}.md")


def _directives() -> dict[str, Path]:
    found: dict[str, Path] = {}
    for page in sorted(API_DIR.glob("*.md")):
        for path in DIRECTIVE.findall(page.read_text(encoding="utf-8")):
            found[path] = page
    return found


def _resolve(path: str) -> Any:
    """The object a directive names: the longest importable module prefix, then attributes."""
    parts = path.split(".")
    for i in range(len(parts), 0, -1):
        name = ".".join(parts[:i])
        try:
            obj: Any = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name != name:
                raise
            continue
        for attr in parts[i:]:
            obj = getattr(obj, attr)
        return obj
    raise ModuleNotFoundError(path)


def _is_api_object(obj: Any) -> bool:
    """Classes, functions and modules are compared by identity; data (constants, mappings) by its path."""
    return inspect.isclass(obj) or inspect.isroutine(obj) or isinstance(obj, ModuleType)


@pytest.mark.parametrize("module", _public_modules())
def test_public_module_has_an_api_page(module: str) -> None:
    mod = importlib.import_module(module)
    assert hasattr(mod, "__all__"), f"{module} defines no __all__: the API reference cannot tell its public names"
    assert _page(module).exists(), f"{module} has no API reference page: add {_page(module).relative_to(ROOT)}"


@pytest.mark.parametrize("module", _public_modules())
def test_every_public_name_is_in_the_api_reference(module: str) -> None:
    mod = importlib.import_module(module)
    directives = _directives()
    resolved = {path: _resolve(path) for path in directives}
    missing = []
    for name in mod.__all__:
        obj = getattr(mod, name)
        exact = f"{module}.{name}"
        if exact in directives:
            continue
        if _is_api_object(obj) and any(target is obj for target in resolved.values() if _is_api_object(target)):
            continue  # documented once where it is defined (a re-export, or a lazily imported class)
        missing.append(exact)
    assert not missing, (f"public names without a `::: path` directive in docs/api/ "
                         f"(add them to {_page(module).relative_to(ROOT)}): {missing}")


def test_every_api_directive_names_an_existing_object() -> None:
    for path, page in _directives().items():
        try:
            _resolve(path)
        except (ImportError, AttributeError) as exc:
            pytest.fail(f"{page.relative_to(ROOT)}: `::: {path}` names nothing ({exc!r})")


def test_the_directive_pattern_sees_the_pages() -> None:
    # The checks above would pass vacuously if the pattern stopped matching the pages' directives.
    directives = _directives()
    assert "privtune.model_selection.PrivateSearchCV" in directives
    assert "privtune.__version__" in directives


def test_every_results_file_is_on_a_measurements_page() -> None:
    shown: list[str] = []
    for page in sorted((ROOT / "docs" / "measurements").glob("*.md")):
        shown += RESULTS_MARKER.findall(page.read_text(encoding="utf-8"))
    saved = sorted(p.stem for p in (ROOT / "benchmarks" / "results").glob("*.md"))
    assert sorted(set(shown)) == sorted(shown), "a results file is included on two Measurements pages"
    assert sorted(shown) == saved, (f"not shown: {sorted(set(saved) - set(shown))}; "
                                    f"no such results file: {sorted(set(shown) - set(saved))}")


@pytest.mark.slow
def test_site_builds_strict_without_warnings(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file", str(ROOT / "mkdocs.yml"),
         "--site-dir", str(tmp_path / "site")],
        cwd=ROOT, capture_output=True, text=True, timeout=600, check=False)
    output = result.stdout + result.stderr
    warnings = [line for line in output.splitlines() if line.startswith(("WARNING", "ERROR"))]
    assert result.returncode == 0 and not warnings, f"mkdocs build --strict failed:\n{output[-5000:]}"
    for page in ("index.html", "api/model_selection/index.html", "measurements/privacy_utility/index.html"):
        assert (tmp_path / "site" / page).is_file(), f"the built site has no {page}"
    reference = (tmp_path / "site" / "api" / "model_selection" / "index.html").read_text(encoding="utf-8")
    assert 'id="privtune.model_selection.PrivateSearchCV"' in reference

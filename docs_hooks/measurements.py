"""MkDocs hook: the Measurements pages include the benchmark results at build time.

The saved results live in ``benchmarks/results/`` (outside ``docs_dir``), written by the benchmark scripts. Copying
them into ``docs/`` would let the copies rot, so each page under ``docs/measurements/`` names the results it shows
with a marker line, and this hook replaces the marker with the results file as it is when the site is built:

``<!-- results: NAME -->``
    The file ``benchmarks/results/NAME.md``, under a heading anchored ``#NAME``, preceded by the date it states it
    was run and a link to the script that wrote it (its headings moved one level down). Images
    ``benchmarks/results/NAME*.png`` are shown after it.
``<!-- results-index -->``
    A table of every results file: its page, run date and script.

The scripts and plots are copied into the built site (``measurements/scripts/...``, ``measurements/results/...``)
so the links work without a hosted repository. A script is found wherever it lives under ``benchmarks/`` (the
results file's own mention of ``benchmarks/....py`` first, then the script whose name is the longest prefix of the
results file's name), so moving scripts into sub-folders does not break the build.

Links from any page to ``../benchmarks/results/NAME.md`` (which work when the Markdown is read in the repository)
are rewritten to the measurement page that shows NAME.

The hook logs a warning -- an error under ``mkdocs build --strict`` -- when a results file is on no page or on two,
when a marker names a missing file, or when no script can be found for a results file.
"""

from __future__ import annotations

import logging
import posixpath
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

from mkdocs.structure.files import File, Files

log = logging.getLogger("mkdocs.hooks.measurements")

MEASUREMENTS_DIR = "measurements"
RESULTS_MARKER = re.compile(r"^<!--\s*results:\s*([A-Za-z0-9_.-]+)\s*-->[ \t]*$", re.MULTILINE)
INDEX_MARKER = re.compile(r"^<!--\s*results-index\s*-->[ \t]*$", re.MULTILINE)
SCRIPT_MENTION = re.compile(r"benchmarks/(?:[A-Za-z0-9_]+/)*([A-Za-z0-9_]+\.py)")
DATE = re.compile(r"\b(20\d\d-[01]\d-[0-3]\d)(?:[ T]([0-2]\d:[0-5]\d))?")
LINK = re.compile(r"(\]\()([^)\s#]+)(#[^)\s]*)?(\))")
FENCE = re.compile(r"^(```|~~~)")


@dataclass
class Result:
    name: str
    path: Path
    page: str | None = None  # src_uri of the measurement page that includes it
    page_title: str = ""
    script: Path | None = None


_state: dict[str, object] = {}


def _repo_root(config) -> Path:
    return Path(config["config_file_path"]).resolve().parent


def _scripts(root: Path) -> dict[str, list[Path]]:
    found: dict[str, list[Path]] = {}
    for path in sorted((root / "benchmarks").rglob("*.py")):
        if "results" in path.relative_to(root / "benchmarks").parts or path.name.startswith("_"):
            continue
        found.setdefault(path.name, []).append(path)
    return found


def _find_script(result: Result, text: str, scripts: dict[str, list[Path]]) -> Path | None:
    candidates = [m.group(1) for m in SCRIPT_MENTION.finditer(text)]
    stems = sorted((name[:-3] for name in scripts), key=len, reverse=True)
    candidates += [f"{stem}.py" for stem in stems if result.name == stem or result.name.startswith(stem + "_")]
    for name in candidates:
        if len(scripts.get(name, [])) == 1:
            return scripts[name][0]
    return None


def _run_date(result: Result, text: str, root: Path) -> str:
    dates = sorted({f"{d} {t}".strip() if t else d for d, t in DATE.findall(text)})
    if len(dates) == 1:
        return dates[0]
    if dates:
        return f"between {dates[0]} and {dates[-1]} (the file states each part's date)"
    try:
        out = subprocess.run(["git", "log", "-1", "--format=%cs %h", "--", str(result.path)], cwd=root,
                             capture_output=True, text=True, timeout=30, check=False).stdout.strip()
    except OSError:
        out = ""
    if out:
        day, commit = out.split()
        return f"not stated in the results file (last changed {day}, commit {commit})"
    return "not stated in the results file"


def on_files(files: Files, config) -> Files:
    root = _repo_root(config)
    results_dir = root / "benchmarks" / "results"
    results = {p.stem: Result(p.stem, p) for p in sorted(results_dir.glob("*.md"))}
    scripts = _scripts(root)
    docs_dir = Path(config["docs_dir"])

    for page in sorted((docs_dir / MEASUREMENTS_DIR).glob("*.md")):
        src_uri = f"{MEASUREMENTS_DIR}/{page.name}"
        source = page.read_text(encoding="utf-8")
        heading = re.search(r"^# (.+)$", source, re.MULTILINE)
        for name in RESULTS_MARKER.findall(source):
            if name not in results:
                log.warning("%s names results '%s', but benchmarks/results/%s.md does not exist", src_uri, name, name)
            elif results[name].page is not None:
                log.warning("benchmarks/results/%s.md is included twice (%s and %s)", name, results[name].page, src_uri)
            else:
                results[name].page = src_uri
                results[name].page_title = heading.group(1).strip() if heading else page.stem

    copied: set[Path] = set()
    for result in results.values():
        if result.page is None:
            log.warning("benchmarks/results/%s.md is on no page under docs/%s/: add `<!-- results: %s -->` to the "
                        "page of its family", result.name, MEASUREMENTS_DIR, result.name)
            continue
        result.script = _find_script(result, result.path.read_text(encoding="utf-8"), scripts)
        if result.script is None:
            log.warning("no script under benchmarks/ found for benchmarks/results/%s.md", result.name)
        elif result.script not in copied:
            copied.add(result.script)
            rel = result.script.relative_to(root / "benchmarks").as_posix()
            files.append(File.generated(config, f"{MEASUREMENTS_DIR}/scripts/{rel}", abs_src_path=str(result.script)))
        for image in sorted(results_dir.glob(f"{result.name}*.png")):
            files.append(File.generated(config, f"{MEASUREMENTS_DIR}/results/{image.name}", abs_src_path=str(image)))
    _state.update(root=root, results=results)
    return files


def _demote(text: str) -> tuple[str, str]:
    """The results file's title and its body with every heading one level down (code blocks untouched)."""
    lines = text.splitlines()
    title = ""
    body: list[str] = []
    in_fence = False
    for line in lines:
        if FENCE.match(line):
            in_fence = not in_fence
        elif not in_fence and not title and line.startswith("# "):
            title = line[2:].strip()
            continue
        elif not in_fence and re.match(r"^#{1,5} ", line):
            line = "#" + line
        body.append(line)
    return title, "\n".join(body).strip("\n")


def _relative(url_from_page: str, target: str) -> str:
    return posixpath.relpath(target, posixpath.dirname(url_from_page) or ".")


def _section(result: Result, page_uri: str, root: Path) -> str:
    text = result.path.read_text(encoding="utf-8")
    title, body = _demote(text)
    rel_results = result.path.relative_to(root).as_posix()
    if result.script is not None:
        rel_script = result.script.relative_to(root).as_posix()
        target = f"{MEASUREMENTS_DIR}/scripts/{result.script.relative_to(root / 'benchmarks').as_posix()}"
        script = f"[`{rel_script}`]({_relative(page_uri, target)})"
    else:
        script = "not found"
    parts = [f"## {title or result.name} {{#{result.name}}}", "",
             f"*Results file* `{rel_results}` · *run* {_run_date(result, text, root)} · *script* {script}", "",
             body]
    for image in sorted(result.path.parent.glob(f"{result.name}*.png")):
        target = f"{MEASUREMENTS_DIR}/results/{image.name}"
        parts += ["", f"![{image.name}]({_relative(page_uri, target)})"]
    return "\n".join(parts) + "\n"


def _index(page_uri: str, results: dict[str, Result], root: Path) -> str:
    rows = ["| results file | page | run | script |", "|---|---|---|---|"]
    for result in results.values():
        if result.page is None:
            continue
        text = result.path.read_text(encoding="utf-8")
        page = f"[{result.page_title}]({_relative(page_uri, result.page)}#{result.name})"
        script = f"`{result.script.relative_to(root).as_posix()}`" if result.script else "not found"
        rows.append(f"| `{result.name}.md` | {page} | {_run_date(result, text, root)} | {script} |")
    return "\n".join(rows) + "\n"


def _rewrite_links(markdown: str, page_uri: str, root: Path, docs_dir: Path, results: dict[str, Result]) -> str:
    """Links that leave docs/ for a results file point at the measurement page that shows it."""

    def replace(match: re.Match[str]) -> str:
        href = match.group(2)
        if "://" in href or href.startswith(("/", "mailto:")):
            return match.group(0)
        target = (docs_dir / posixpath.dirname(page_uri) / href).resolve()
        try:
            rel = target.relative_to(root / "benchmarks" / "results")
        except ValueError:
            return match.group(0)
        result = results.get(rel.stem) if rel.suffix == ".md" and len(rel.parts) == 1 else None
        if result is None or result.page is None:
            return match.group(0)
        return f"{match.group(1)}{_relative(page_uri, result.page)}#{result.name}{match.group(4)}"

    return LINK.sub(replace, markdown)


def on_page_markdown(markdown: str, page, config, files) -> str:
    root: Path = _state["root"]  # type: ignore[assignment]
    results: dict[str, Result] = _state["results"]  # type: ignore[assignment]
    page_uri = page.file.src_uri
    if page_uri.startswith(f"{MEASUREMENTS_DIR}/"):
        markdown = RESULTS_MARKER.sub(
            lambda m: _section(results[m.group(1)], page_uri, root) if m.group(1) in results else m.group(0),
            markdown)
        markdown = INDEX_MARKER.sub(lambda m: _index(page_uri, results, root), markdown)
    return _rewrite_links(markdown, page_uri, root, Path(config["docs_dir"]).resolve(), results)

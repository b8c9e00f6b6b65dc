"""Run a suite of benchmarks: ``python -m benchmarks <suite> [--quick]``, or ``python -m benchmarks list``.

A suite is a folder of ``benchmarks/`` (``engine``, ``search``, ``privacy_utility``, ``trainers``, ``papers``,
``studies``) and its scripts are the ``*.py`` files in it; ``all`` runs every suite. Run from the repository root.

A full run starts each script in its own interpreter (one thread: ``OMP_NUM_THREADS=1`` unless set), with its
default arguments, and then the further invocations listed in ``EXTRA_RUNS`` that produce its other stored results;
each writes under ``benchmarks/results/``. Several take tens of minutes (``benchmarks/README.md`` gives each run
time). ``--quick`` runs every script's smoke mode instead (tiny sizes, seconds each, nothing written under
``benchmarks/results/``), one after the other in this interpreter to save the imports; the exit status is 1 if
any script failed.
"""

from __future__ import annotations

import argparse
import os
import runpy
import subprocess
import sys
import time
import traceback
from pathlib import Path

HERE = Path(__file__).resolve().parent

#: Further invocations of a full run (not of ``--quick``), each producing stored results of its own.
EXTRA_RUNS: dict[str, list[list[str]]] = {
    "engine/bo_overhead": [["--scale"]],
    "studies/dpsvc_features": [["--features", "fourier"]],
    "studies/dpsvc_linear_share": [["--features", "fourier"]],
    "studies/dpsgd_defaults": [["--part", "regressor-heldout"]],
}

#: Arguments a script needs (every run of it, ``--quick`` included).
REQUIRED_ARGS: dict[str, list[list[str]]] = {
    "studies/dpsvc_horizon_floor": [["--group", "dev"], ["--group", "heldout"], ["--group", "confirm"]],
    "studies/dpsvc_taylor_threshold": [["--group", "dev"], ["--group", "heldout"]],
}


def suites() -> dict[str, list[str]]:
    """Each suite's scripts (``suite/name``), sorted."""
    return {d.name: sorted(f"{d.name}/{p.stem}" for p in d.glob("*.py") if not p.name.startswith("_"))
            for d in sorted(HERE.iterdir()) if (d / "__init__.py").is_file()}


def first_line(script: str) -> str:
    """The first line of a script's docstring: the question it answers."""
    import ast

    doc = ast.get_docstring(ast.parse((HERE / f"{script}.py").read_text())) or ""
    return doc.strip().splitlines()[0] if doc.strip() else ""


def invocations(script: str, quick: bool) -> list[list[str]]:
    """The argument lists a run of ``script`` makes: one per required variant (plus the extra runs if full)."""
    runs = REQUIRED_ARGS.get(script, [[]])
    if quick:
        return [runs[0] + ["--quick"]]
    return runs + EXTRA_RUNS.get(script, [])


def run_in_process(script: str, args: list[str]) -> bool:
    """Run one script as ``__main__`` in this interpreter; True if it ended without an error."""
    argv = sys.argv
    sys.argv = [str(HERE / f"{script}.py"), *args]
    try:
        runpy.run_path(sys.argv[0], run_name="__main__")
    except SystemExit as exc:
        return exc.code in (None, 0)
    except Exception:  # noqa: BLE001 -- report, and go on with the suite's other scripts
        traceback.print_exc()
        return False
    finally:
        sys.argv = argv
    return True


def run_subprocess(script: str, args: list[str]) -> bool:
    env = dict(os.environ)
    env.setdefault("OMP_NUM_THREADS", "1")
    module = "benchmarks." + script.replace("/", ".")
    return subprocess.run([sys.executable, "-m", module, *args], cwd=HERE.parent, env=env, check=False).returncode == 0


def main(argv: list[str] | None = None) -> int:
    all_suites = suites()
    ap = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__.splitlines()[0])
    ap.add_argument("suite", choices=["list", "all", *all_suites], help="a suite to run, all of them, or list")
    ap.add_argument("--quick", action="store_true", help="each script's smoke mode (seconds; writes no results)")
    args = ap.parse_args(argv)
    if args.suite == "list":
        for suite, scripts in all_suites.items():
            print(f"{suite}:")
            for script in scripts:
                print(f"  {script.split('/')[1]:28s} {first_line(script)}")
        return 0
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    chosen = list(all_suites) if args.suite == "all" else [args.suite]
    failed, t_all = [], time.perf_counter()
    for suite in chosen:
        for script in all_suites[suite]:
            for extra in invocations(script, args.quick):
                label = " ".join([script, *extra])
                print(f"== {label}", flush=True)
                t0 = time.perf_counter()
                ok = run_in_process(script, extra) if args.quick else run_subprocess(script, extra)
                print(f"== {label}: {'ok' if ok else 'FAILED'} in {time.perf_counter() - t0:.1f} s", flush=True)
                if not ok:
                    failed.append(label)
    print(f"== {len(failed)} failed of the runs of {', '.join(chosen)}, {time.perf_counter() - t_all:.0f} s"
          + (": " + "; ".join(failed) if failed else ""), flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

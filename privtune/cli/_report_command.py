"""``privtune report STUDY.sqlite [--study NAME] [--json F] [--markdown F] [--html F]``: re-render a stored study.

Lists the studies of a file holding several, and refuses (exit status 2) a missing file, an unknown study or one
with no report yet.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Mapping
from pathlib import Path

from privtune.cli._output import EXIT_OK, CLIError, _report_from_study, _write_report


def _report(args: argparse.Namespace) -> int:
    from privtune.storage import StudyStorage

    path = Path(args.study_file)
    if not path.is_file():
        raise CLIError(f"{str(path)!r}: study file not found (privtune tune writes a study to the configuration's "
                       "storage.path, resolved against the configuration file's directory; it prints the path)")
    outputs = {fmt: Path(p) for fmt, p in (("json", args.json), ("markdown", args.markdown), ("html", args.html))
               if p is not None}
    storage = StudyStorage(str(path))
    try:
        names = storage.study_names()
        if not names:
            raise CLIError(f"{str(path)!r} holds no study")
        if args.study is None and len(names) > 1:
            print(f"{path} holds {len(names)} studies (name one with --study NAME):")
            for n in names:
                print(f"  {n}  [{storage.status(n)}]")
            if outputs:
                raise CLIError("--study: several studies in the file; name the one to render")
            return EXIT_OK
        name = args.study if args.study is not None else names[0]
        if name not in names:
            raise CLIError(f"--study: no study {name!r} in {str(path)!r}; it holds: {', '.join(names)}")
        stored = storage.load_report(name)
        config = storage.load_config(name)
        status = storage.status(name)
    finally:
        storage.close()
    if stored is None:
        raise CLIError(f"study {name!r} has no report yet (status: {status}); finish it with "
                       "privtune tune CONFIG.toml --resume")
    report = _report_from_study(stored, config)
    if not outputs:
        print(report.to_markdown() if not isinstance(report, Mapping) else json.dumps(report, indent=2))
        return EXIT_OK
    for fmt, p in _write_report(report, outputs).items():
        print(f"report ({fmt}): {p}")
    return EXIT_OK

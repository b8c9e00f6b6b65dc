"""``privtune demo`` imports only what it uses (issue 41): the configuration package belongs to ``tune`` and
``budget``, and a configuration error is still told as one."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

from privtune.cli import main


def _modules_seen(code: str) -> set[str]:
    """The module names a fresh interpreter running ``code`` prints (one JSON list, its last line)."""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    return set(json.loads(out.strip().splitlines()[-1]))


def test_command_line_does_not_import_the_configuration_package():
    """main() up to the demo's own code loads neither privtune.config nor matplotlib (a third of a second and half
    a second of the demo; the demo itself needs neither before it renders its report)."""
    loaded = _modules_seen(textwrap.dedent("""
        import json, sys
        from privtune.cli import _main
        parser, seen = _main._parser(), set()
        def record(args):
            seen.update(sys.modules)
            return 0
        for sub in parser._subparsers._group_actions[0].choices.values():
            sub.set_defaults(func=record)
        _main._parser = lambda: parser
        assert _main.main(["demo", "--quiet"]) == 0
        print(json.dumps(sorted(seen)))
    """))
    assert "privtune.cli._demo_command" in loaded
    assert not {m for m in loaded if m == "privtune.config" or m.startswith("privtune.config.")}
    assert "matplotlib" not in loaded


def test_configuration_error_still_says_invalid_configuration(tmp_path, capsys):
    """main() tells a ConfigError of several lines as an invalid configuration (the class is looked up without
    importing privtune.config up front)."""
    bad = tmp_path / "bad.toml"
    bad.write_text('[estimator]\nclass = "sklearn.svm.SVC"\n[search]\nepsilon = -1\nn_iter = -2\n')
    assert main(["budget", str(bad)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("privtune: error: invalid configuration:\n")
    assert "  search.epsilon: expected a float > 0, got -1" in err


def test_other_multiline_errors_are_not_called_configuration_errors(monkeypatch, capsys):
    """A PrivtuneError of several lines that is not a ConfigError keeps the plain prefix."""
    from privtune.cli import _main
    from privtune.exceptions import InvalidParameterError

    def fail(args):
        raise InvalidParameterError("first line\nsecond line")

    parser = _main._parser()
    monkeypatch.setattr(_main, "_parser", lambda: parser)
    parser.set_defaults(func=fail)
    for action in parser._subparsers._group_actions[0].choices.values():
        action.set_defaults(func=fail)
    assert main(["demo", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err == "privtune: error: \n  first line\n  second line\n"

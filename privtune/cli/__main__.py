"""``python -m privtune.cli``: the ``privtune`` command."""

import sys

from privtune.cli._main import main

if __name__ == "__main__":  # importing the module (pkgutil.walk_packages, the docs) must not run the command
    sys.exit(main())

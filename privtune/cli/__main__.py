"""``python -m privtune.cli``: the ``privtune`` command."""

import sys

from privtune.cli._main import main

sys.exit(main())

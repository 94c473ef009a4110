"""``python -m numtok.cli``: the ``numtok`` command."""

import sys

from . import main

sys.exit(main())

"""``python -m numtok``: the same command line as the ``numtok`` console script."""

import sys

from .cli import main

sys.exit(main())

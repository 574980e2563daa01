"""``python -m toolpass.server ARGS...`` is ``toolpass serve ARGS...``."""

import sys

from toolpass.server.serve import main

sys.exit(main())

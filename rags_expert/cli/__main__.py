"""``python -m rags_expert.cli``: the same as the ``rags-expert`` command."""

import sys

from rags_expert.cli import main

sys.exit(main())

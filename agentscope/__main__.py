"""``python -m agentscope``: the ``agentscope`` command (see :mod:`agentscope.cli`)."""

import sys

from agentscope.cli import main

if __name__ == "__main__":
    sys.exit(main())

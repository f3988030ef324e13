"""``python -m mockmcp``."""

import sys

from mockmcp.cli.main import main

sys.exit(main())

"""``python -m mockmcp``."""

import sys

from .cli import main

sys.exit(main())

"""``python -m durasim`` is ``durasim-lab``."""

import sys

from .lab import main

sys.exit(main())

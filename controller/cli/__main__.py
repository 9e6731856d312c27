"""`python -m controller.cli`: tablectl, through its entry point (controller/tablectl.py)."""

import sys

from controller.tablectl import main

if __name__ == "__main__":
    sys.exit(main())

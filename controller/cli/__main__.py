"""`python -m controller.cli`: tablectl."""

import sys

from controller.cli import main

if __name__ == "__main__":
    sys.exit(main())

import sys

from controller.display.service import main

sys.exit(main())

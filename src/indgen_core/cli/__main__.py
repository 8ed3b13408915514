import sys

from indgen_core.cli import main

sys.exit(main())

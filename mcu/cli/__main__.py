"""`python -m mcu.cli ...`: the mcu command."""
import sys

from mcu.cli import main

sys.exit(main())

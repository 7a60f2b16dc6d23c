"""``python -m pgm_dp.cli``."""

from . import main

raise SystemExit(main())

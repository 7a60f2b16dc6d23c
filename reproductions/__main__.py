"""``python -m reproductions PAPER EXPERIMENT [options]``."""

from ._cli import main

raise SystemExit(main())

"""``python -m tests.support.synthetic OUT_DIR --ranks N --steps S --seed K [--int-us]``."""

from tests.support.synthetic import main

raise SystemExit(main())

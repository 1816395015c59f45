"""Write a synthetic Nsight Systems SQLite export with the real table layout.

    python benchmarks/nsys_synthetic_export.py OUT.sqlite [--kernels N] [--seed S]

The writer and the layout live with the tests' builders, ``tests/support/nsys_sqlite.py``
(its docstring describes the synthetic run); this script is its command line.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script from anywhere

from tests.support.nsys_sqlite import main, write_synthetic_export

__all__ = ["main", "write_synthetic_export"]

if __name__ == "__main__":
    main()

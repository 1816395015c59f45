"""The one ``--force`` option of every command that writes files (docs/report.md, "Output files").

Without ``--force`` an existing output file is refused at once, before any work (exit 2, one
line naming the file); writes are atomic (:mod:`reports.output`).
"""

from __future__ import annotations

from typing import Annotated

import typer

FORCE_HELP = "Replace output files that already exist (without it, an existing one is an error)."

ForceOpt = Annotated[bool, typer.Option("--force", help=FORCE_HELP)]

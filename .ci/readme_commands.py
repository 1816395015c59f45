"""Print the README's set-up commands, one per line, exactly as written.

They are the ``bash`` code blocks of the section "Set-up on a fresh machine"; ``.ci/run`` runs
them so that CI is a new user following the README.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path


def setup_commands(readme: str) -> list[str]:
    m = re.search(r"^## Set-up on a fresh machine\n(.*?)(?=^## )", readme, re.M | re.S)
    if not m:
        raise SystemExit("README.md has no '## Set-up on a fresh machine' section")
    blocks = re.findall(r"```bash\n(.*?)```", m.group(1), re.S)
    return [" ".join(b.split("\\\n")).strip() for b in blocks]


if __name__ == "__main__":
    for cmd in setup_commands(Path(sys.argv[1]).read_text()):
        print(cmd)

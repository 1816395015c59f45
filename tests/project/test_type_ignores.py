"""Every ``# type: ignore`` in the product packages names its error code and says why on the
same line (``# type: ignore[code]  # reason``); mypy (``.ci/run``) reports unused ones."""

from __future__ import annotations

import re

from tests.support.env import REPO

PACKAGES = ("profiler", "collectors", "analyzers", "reports", "cli")
IGNORE = re.compile(r"#\s*type:\s*ignore(?P<code>\[[\w\-, ]+\])?(?P<rest>.*)$")


def test_each_type_ignore_has_a_code_and_a_reason() -> None:
    bad = []
    for pkg in PACKAGES:
        for path in sorted((REPO / pkg).rglob("*.py")):
            for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                m = IGNORE.search(line)
                if m and not (m.group("code") and re.match(r"\s+#\s*\S", m.group("rest"))):
                    bad.append(f"{path.relative_to(REPO)}:{n}: {line.strip()}")
    assert bad == []

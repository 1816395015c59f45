"""Print — or write into docs/inference.md — the generated tables of that page: graph
attribution coverage, category and phase rules, gpuscope vs TraceLens on every shared trace with
a TraceLens category summary, the shared serving steps, MFU on the shared serving traces.

Usage: ``PYTHONPATH=$PWD python benchmarks/serving_docs_tables.py [--update] [SHARED_DATA]``
(default ``../shared/data``).  ``--update`` rewrites each block between
``<!-- generated: NAME -->`` and ``<!-- end generated -->`` of docs/inference.md.
``tests/analyzers/serving/test_serving_docs.py`` checks the page holds the tables.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.support import serving_docs, tracelens_compare  # noqa: E402

DOC = REPO / "docs" / "inference.md"
BLOCK = re.compile(r"(<!-- generated: (\w+) -->\n).*?(<!-- end generated -->)", re.S)


def tables(tracelens: Path) -> dict[str, str]:
    """Each generated table by its block name."""
    return {
        "graph_coverage_table": serving_docs.graph_coverage_table(tracelens),
        "category_rules_table": serving_docs.category_rules_table(),
        "totals_table": tracelens_compare.totals_table(tracelens),
        "share_table": tracelens_compare.share_table(tracelens),
        "phase_rules_table": serving_docs.phase_rules_table(),
        "phase_results_table": serving_docs.phase_results_table(tracelens),
        "moe_roles_table": serving_docs.moe_roles_table(),
        "mfu_results_table": serving_docs.mfu_results_table(tracelens),
    }


def main() -> None:
    args = [a for a in sys.argv[1:] if a != "--update"]
    data = Path(args[0]) if args else REPO.parent / "shared" / "data"
    t = tables(data / "kineto" / "tracelens")
    if "--update" not in sys.argv:
        print("\n\n".join(f"{k}:\n\n{v}" for k, v in t.items()))
        return
    text = BLOCK.sub(lambda m: f"{m.group(1)}{t[m.group(2)]}\n{m.group(3)}", DOC.read_text())
    DOC.write_text(text)


if __name__ == "__main__":
    main()

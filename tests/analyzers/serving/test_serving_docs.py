"""docs/inference.md holds the tables generated from the code and the shared traces, verbatim
(``benchmarks/serving_docs_tables.py --update`` writes them)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.support.scripts import load_script
from tests.support.serving_data import tracelens_root

REPO = Path(__file__).resolve().parents[3]
DOC = REPO / "docs" / "inference.md"


def _script():
    return load_script(REPO / "benchmarks" / "serving_docs_tables.py")


def test_every_generated_block_of_the_page_is_up_to_date():
    mod = _script()
    tables = mod.tables(tracelens_root())
    blocks = dict(
        re.findall(
            r"<!-- generated: (\w+) -->\n(.*?)\n<!-- end generated -->", DOC.read_text(), re.S
        )
    )
    assert set(blocks) == set(tables)
    for name, table in tables.items():
        assert blocks[name] == table, name


@pytest.mark.parametrize("name", ["category_rules_table", "phase_rules_table", "moe_roles_table"])
def test_rule_tables_need_no_data(name):
    text = DOC.read_text()
    assert getattr(_script().serving_docs, name)() in text

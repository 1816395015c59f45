"""The plain table layout prints exactly what rich prints, on random tables: any widths,
justification, minimum widths, wide and combining characters, titles that wrap, markup and
emoji codes, line breaks, tabs and blank ends in cells, tables wider than the console, and
consoles with colours (the last ones are handed to rich)."""

from __future__ import annotations

import io

from hypothesis import given, settings
from hypothesis import strategies as st
from rich.console import Console
from rich.table import Table
from rich.text import Text

from reports.table_text import Fast, plain_lines

CHARS = "ab zµ–é中\u0301[:]\t\n.%0123456789"
PLAIN = "ab zµ–é中.%0123456789:-"
"""Plain cells may hold colons: only a colon pair around a word (``:smile:``, ``:a-text:``)
is an emoji code to rich."""
EMOJI_LIKE = st.sampled_from([":a:", ":smile:", "x: y", "a:b:c", ":thumbs_up-emoji:", "p50: 1:"])


@st.composite
def tables(draw: st.DrawFn, plain: bool = False) -> Table:
    """Random tables; *plain*: mostly ones the plain layout takes (no special characters,
    no blank ends, left, right or centred justification)."""
    words = st.text(alphabet=PLAIN if plain else CHARS, max_size=14)
    if plain:
        words = st.one_of(words.map(str.strip), words.map(str.strip), words, EMOJI_LIKE)
    title = draw(st.one_of(st.none(), st.text(alphabet="ab c–中", max_size=40)))
    t = Table(title=title, title_justify=draw(st.sampled_from(["left", "center", "right"])))
    n_cols = draw(st.integers(1, 5))
    for _ in range(n_cols):
        t.add_column(
            draw(words),
            justify=draw(
                st.sampled_from(["left", "right", "center"] if plain else ["left", "center"])
            ),
            min_width=draw(st.one_of(st.none(), st.integers(0, 25))),
            no_wrap=draw(st.booleans()),
            overflow=draw(st.sampled_from(["fold", "crop", "ellipsis"])),
        )
    for _ in range(draw(st.integers(0, 6))):
        cells = [draw(st.one_of(words, words.map(Text))) for _ in range(n_cols)]
        t.add_row(*cells)
    return t


def _printed(renderable: object, width: int, color: bool) -> str:
    buf = io.StringIO()
    console = Console(
        file=buf,
        width=width,
        force_terminal=color,
        color_system="truecolor" if color else None,
    )
    console.print(renderable)
    return buf.getvalue()


@settings(max_examples=1000, deadline=None)
@given(st.one_of(tables(), tables(plain=True)), st.integers(8, 160), st.booleans())
def test_fast_tables_print_what_rich_prints(table: Table, width: int, color: bool) -> None:
    assert _printed(Fast(table), width, color) == _printed(table, width, color)


@settings(max_examples=1000, deadline=None)
@given(tables(plain=True), st.integers(8, 200))
def test_plain_tables_print_what_rich_prints_wide_or_collapsed(table: Table, width: int) -> None:
    """Tables that fit, and tables that rich narrows (collapsed columns, wrapped cells)."""
    assert _printed(Fast(table), width, False) == _printed(table, width, False)


def test_a_plain_table_takes_the_plain_layout() -> None:
    t = Table(title="Rank 0: steps", title_justify="left")
    t.add_column("step", justify="right")
    t.add_column("host ms", justify="right")
    t.add_row("1", "12.345")
    t.add_row("2", Text("0.5"))
    console = Console(file=io.StringIO(), width=80)
    lines = plain_lines(t, console, console.options)
    assert lines is not None and lines[1] == "┏━━━━━━┳━━━━━━━━━┓"
    assert _printed(Fast(t), 80, False) == _printed(t, 80, False)

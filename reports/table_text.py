"""Rich tables printed without rich's per-cell layout machinery, where the output is the same.

Rendering a :class:`rich.table.Table` measures and lays out every cell through rich's generic
renderable protocol (tens of µs a cell: 0.07 s for the steps table of a 117-step trace).  For
the plain tables the console sections print, the layout is simple: every cell on one line, each
column as wide as its widest cell plus padding, the table as wide as its columns and borders.
:class:`Fast` prints such a table by that rule, line by line, when it gives exactly rich's
output; otherwise (colours or styles to emit, a table wider than the console, wrapping cells,
markup or emoji codes in a cell, options the rule does not model) it hands the table to rich.

A table wider than the console gets rich's column widths (the same measurements and
collapse); the title and any cell that then wraps are still rendered by rich itself.
``tests/reports/test_table_text.py`` checks the output against rich's on random tables.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable

from rich import box
from rich._ratio import ratio_reduce
from rich._wrap import divide_line
from rich.cells import cell_len, set_cell_size
from rich.console import Console, ConsoleOptions, RenderableType, RenderResult
from rich.padding import Padding
from rich.segment import Segment
from rich.style import Style
from rich.table import Column, Table
from rich.text import Text

_MARKUP = frozenset("[]")
"""Characters of a ``str`` cell that rich may read as markup."""
_EMOJI_CODE = re.compile(r"(:(\S*?)(?:(?:\-)(emoji|text))?:)")
"""What rich reads as an emoji code in a ``str`` cell (``rich._emoji_replace``'s pattern):
a cell with a match goes to rich, whether or not the name is an emoji's."""


class Fast:
    """*table* printed by the plain layout when that is rich's own output (module docstring)."""

    def __init__(self, table: Table) -> None:
        self.table = table

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        lines = plain_lines(self.table, console, options)
        if lines is None:
            yield self.table
            return
        for line in lines:
            yield Segment(line)
            yield Segment.line()


def _cell_text(cell: object) -> str | None:
    """The text a cell renders as, or None when it may render otherwise (markup or emoji
    codes in a string, a line break, tab or other unprintable character, whitespace at
    either end, a :class:`rich.text.Text` with its own justification)."""
    if isinstance(cell, Text):
        if cell.justify is not None or cell.end != "\n":
            return None
        text = cell.plain
    elif isinstance(cell, str):
        if not _MARKUP.isdisjoint(cell) or (":" in cell and _EMOJI_CODE.search(cell)):
            return None
        text = cell
    else:
        return None
    return text if text.isprintable() and text == text.strip() else None


def _eligible(table: Table, console: Console, options: ConsoleOptions) -> bool:
    if console.color_system is not None or options.legacy_windows or options.ascii_only:
        return False
    if table.box is not box.HEAVY_HEAD or not (table.show_header and table.show_edge):
        return False
    if table.show_lines or table.leading or table.show_footer or table.caption or table.expand:
        return False
    if table.width is not None or table.min_width is not None or table.row_styles:
        return False
    if tuple(table.padding) != (0, 1, 0, 1) or not table.pad_edge or table.collapse_padding:
        return False
    if any(row.end_section or row.style for row in table.rows):
        return False
    return all(
        c.width is None and c.max_width is None and c.ratio is None and c.justify in _JUSTIFY
        for c in table.columns
    )


_JUSTIFY = ("left", "right", "center")


def plain_lines(table: Table, console: Console, options: ConsoleOptions) -> list[str] | None:
    """The lines rich prints for *table*, or None when the plain layout may differ."""
    if not table.columns or not _eligible(table, console, options):
        return None
    raw = [[column.header, *column.cells] for column in table.columns]
    columns: list[list[str]] = []
    for cells_of in raw:
        found = [_cell_text(c) for c in cells_of]
        if any(t is None for t in found):
            return None
        columns.append([t for t in found if t is not None])
    widths = _widths(table, columns, options.max_width - (2 + len(columns) - 1))
    if min(widths) < 3:
        return None
    table_width = sum(widths) + 2 + len(widths) - 1
    cell_options = options.update(height=None)
    out = _title(table, console, options, table_width)
    b = table.box
    assert b is not None  # _eligible
    out.append(b.get_top(widths))
    n_rows = len(columns[0])
    for i in range(n_rows):
        if i == 0:
            left, right, sep = b.head_left, b.head_right, b.head_vertical
        elif i == n_rows - 1:
            left, right, sep = b.foot_left, b.foot_right, b.foot_vertical
        else:
            left, right, sep = b.mid_left, b.mid_right, b.mid_vertical
        cells = []
        for texts, cells_of, w, column in zip(columns, raw, widths, table.columns, strict=True):
            if cell_len(texts[i]) <= w - 2:
                cells.append([_justify(texts[i], w - 2, column.justify)])
            else:  # it wraps (or is cut), as rich's Text.wrap would do it
                lines = _wrapped_plain(texts[i], cells_of[i], w, column)
                if lines is None:
                    lines = _wrapped(console, cell_options, cells_of[i], w, column)
                cells.append(lines)
        height = max(len(c) for c in cells)
        for c, w in zip(cells, widths, strict=True):
            blank = [" " * w] * (height - len(c))
            if i == 0:  # the header's cells sit at the bottom, the others at the top
                c[:0] = blank
            else:
                c.extend(blank)
        for line in range(height):
            out.append(left + sep.join(c[line] for c in cells) + right)
        if i == 0:
            out.append(b.get_row(widths, "head", edge=True))
    out.append(b.get_bottom(widths))
    return out


def _normal(m: tuple[int, int]) -> tuple[int, int]:
    """``Measurement.normalize``."""
    low = min(max(0, m[0]), m[1])
    return max(0, low), max(0, max(low, m[1]))


def _at_most(m: tuple[int, int], w: int) -> tuple[int, int]:
    """``Measurement.with_maximum``."""
    return min(m[0], w), min(m[1], w)


def _measure_cell(text: str, w: int) -> tuple[int, int]:
    """``Measurement.get`` of a cell (the text padded by one column each side) in *w*."""
    if w < 1:
        return 0, 0
    if w - 2 < 1:
        padded = (w, w)
    else:
        words = text.split()
        widest = cell_len(text) if text else 0
        inner = _at_most(_normal((max(map(cell_len, words)) if words else widest, widest)), w)
        inner = (0, 0) if inner[1] < 1 else _normal(inner)
        padded = _at_most((inner[0] + 2, inner[1] + 2), w)
    padded = _at_most(_normal(padded), w)
    return (0, 0) if padded[1] < 1 else _normal(padded)


def _measure_column(texts: list[str], w: int, min_width: int | None) -> tuple[int, int]:
    """``Table._measure_column`` of a column of *texts* in *w* columns."""
    if w < 1:
        return 0, 0
    cells = [_measure_cell(t, w) for t in texts]
    low, high = _at_most((max(c[0] for c in cells), max(c[1] for c in cells)), w)
    if min_width is not None:
        floor = max(0, min_width + 2)
        low, high = max(low, floor), max(high, floor)
    return low, high


def _widths(table: Table, columns: list[list[str]], max_width: int) -> list[int]:
    """``Table._calculate_column_widths`` (collapsing wrappable columns when too wide)."""
    mins = [c.min_width for c in table.columns]
    widths = [_measure_column(t, max_width, m)[1] or 1 for t, m in zip(columns, mins, strict=True)]
    if sum(widths) > max_width:
        wrapable = [c.width is None and not c.no_wrap for c in table.columns]
        widths = table._collapse_widths(widths, wrapable, max_width)
        if sum(widths) > max_width:
            widths = ratio_reduce(sum(widths) - max_width, [1] * len(widths), widths, widths)
        widths = [
            _measure_column(t, w, m)[1] or 0 for t, w, m in zip(columns, widths, mins, strict=True)
        ]
    return widths


def _wrapped(
    console: Console, options: ConsoleOptions, cell: RenderableType, width: int, column: Column
) -> list[str]:
    """The lines of one cell that rich wraps, rendered by rich."""
    render_options = options.update(
        width=width,
        justify=column.justify,
        no_wrap=column.no_wrap,
        overflow=column.overflow,
        height=None,
        highlight=column.highlight,
    )
    lines = console.render_lines(Padding(cell, (0, 1, 0, 1)), render_options)
    return ["".join(s.text for s in line) for line in lines]


def _wrapped_plain(text: str, cell: object, width: int, column: Column) -> list[str] | None:
    """The lines of a plain one-line cell (its *text*) that does not fit *width* columns less
    its padding, as rich renders it — :meth:`rich.text.Text.wrap` (its word breaks by rich's
    own ``divide_line``, the whitespace cut at the ends of lines, the column's justification
    and the overflow's cut), each line padded to the column's width; None for an overflow of
    ``ignore`` (rich renders that cell)."""
    w = width - 2
    own_overflow = cell.overflow if isinstance(cell, Text) else None
    own_no_wrap = cell.no_wrap if isinstance(cell, Text) else None
    overflow = own_overflow or column.overflow or "fold"
    if overflow == "ignore":
        return None
    no_wrap = own_no_wrap if own_no_wrap is not None else bool(column.no_wrap)
    if no_wrap:
        lines = [text]
    else:
        bounds = [0, *divide_line(text, w, fold=overflow == "fold"), len(text)]
        lines = [_rstrip_end(text[a:b], w) for a, b in itertools.pairwise(bounds)]
    # Lines.justify: each line cut to the width (right and centre: its end's whitespace first),
    # then padded to it as the column justifies
    left = column.justify == "left"
    return [
        _justify(_truncate(line if left else line.rstrip(), w, overflow), w, column.justify)
        for line in lines
    ]


_TRAILING_SPACE = re.compile(r"\s+$")


def _rstrip_end(text: str, size: int) -> str:
    """``Text.rstrip_end``: whitespace beyond *size* characters cut from the end."""
    if len(text) > size:
        m = _TRAILING_SPACE.search(text)
        if m is not None:
            return text[: len(text) - min(len(m.group(0)), len(text) - size)]
    return text


def _truncate(text: str, width: int, overflow: str) -> str:
    """``Text.truncate``: cut to *width* cells (an ellipsis last for ``ellipsis``)."""
    if cell_len(text) <= width:
        return text
    if overflow == "ellipsis":
        return set_cell_size(text, width - 1) + "…"
    return set_cell_size(text, width)


def _justify(text: str, width: int, how: str) -> str:
    """*text* in a cell of *width* columns with one column of padding each side; centred as
    rich's ``Lines.justify`` centres (the odd column of excess on the right)."""
    excess = width - cell_len(text)
    if how == "center":
        return f" {' ' * (excess // 2)}{text}{' ' * (excess - excess // 2)} "
    pad = " " * excess
    return f" {pad}{text} " if how == "right" else f" {text}{pad} "


def _title(table: Table, console: Console, options: ConsoleOptions, width: int) -> list[str]:
    """The title's lines, rendered by rich as :class:`rich.table.Table` does."""
    if not table.title:
        return []
    render_options = options.update(width=width, highlight=table.highlight, height=None)
    title = table.title
    text = (
        console.render_str(
            title, style=Style.pick_first(table.title_style, "table.title"), highlight=False
        )
        if isinstance(title, str)
        else title
    )
    segments = console.render(text, options=render_options.update(justify=table.title_justify))
    return _lines(segments)


def _lines(segments: Iterable[Segment]) -> list[str]:
    """Segments as text lines (no styles: the console emits none)."""
    return ["".join(s.text for s in line) for line in Segment.split_lines(segments)]

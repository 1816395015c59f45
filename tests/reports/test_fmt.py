"""reports.fmt: the console tables' number and name formatting."""

from __future__ import annotations

from reports import fmt


def test_numbers() -> None:
    assert fmt.ms(1_234_567_890) == "1,234.568"
    assert fmt.us(1_500) == "1.5"
    assert fmt.pct(12.345) == "12.35" and fmt.pct(12.345, 1) == "12.3"
    assert fmt.ms(None) == fmt.us(None) == fmt.pct(None) == "–"


def test_name_text_cut_and_plain() -> None:
    t = fmt.name_text("[bold]abcdef[/bold]", 6)
    assert t.plain == "[bold…" and not t.spans
    assert fmt.name_text(None, 5).plain == "–"
    assert fmt.name_text("abc", 3, overflow="ellipsis").overflow == "ellipsis"
    assert fmt.name_text("abc", 3).overflow is None

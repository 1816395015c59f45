"""The report in a real browser: headless Chromium driven by Python Playwright.

Uses the system Chromium (``GPUSCOPE_CHROMIUM``, else /usr/bin/chromium; never a downloaded
browser).  Skips locally when Playwright or Chromium is missing; fails under ``CI=true``.
A full-page screenshot of the sample report is kept in ``tests/artifacts/`` (or
``GPUSCOPE_ARTIFACTS``).
"""

from __future__ import annotations

import importlib.util
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from reports.html import write_report
from tests.support.env import REPO, require_service
from tests.support.html_summaries import ALL_FIGURES, EVIL_KERNELS, EVIL_RANGES

pytestmark = pytest.mark.browser

FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
ARTIFACTS = Path(os.environ.get("GPUSCOPE_ARTIFACTS", REPO / "tests" / "artifacts"))


def chromium_path() -> str | None:
    exe = os.environ.get("GPUSCOPE_CHROMIUM") or "/usr/bin/chromium"
    return exe if Path(exe).is_file() or shutil.which(exe) else None


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    exe = chromium_path()
    have_pw = importlib.util.find_spec("playwright") is not None
    require_service(
        "chromium",
        exe is not None and have_pw,
        "needs Python Playwright (pip install playwright; never `playwright install`) and "
        "Chromium at GPUSCOPE_CHROMIUM or /usr/bin/chromium (apt-get install chromium)",
    )
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=exe, args=FLAGS, headless=True)
        yield b
        b.close()


def open_report(browser: Any, path: Path) -> tuple[Any, list[str]]:
    """A page showing *path* once every figure has drawn; console errors collected."""
    page = browser.new_page(viewport={"width": 1300, "height": 1000})
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(f"pageerror: {e}"))
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("requestfailed", lambda r: errors.append(f"request failed: {r.url}"))
    page.goto(path.resolve().as_uri())
    for div in page.eval_on_selector_all("div[id^=fig-]", "ds => ds.map(d => d.id)"):
        page.wait_for_selector(f"#{div} .main-svg", timeout=30_000)
    return page, errors


def test_sample_report_renders_every_figure_without_errors(
    browser: Any, sample_summary: dict[str, Any], tmp_path: Path
) -> None:
    path = write_report(sample_summary, tmp_path / "report.html")
    page, errors = open_report(browser, path)
    ids = page.eval_on_selector_all("div[id^=fig-]", "ds => ds.map(d => d.id)")
    assert ids == ALL_FIGURES
    assert page.locator(".js-plotly-plot").count() == len(ALL_FIGURES)
    for div in ids:  # plotly draws three .main-svg layers per figure
        assert page.locator(f"#{div} .main-svg").count() >= 1, div
    assert errors == []
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    shot = ARTIFACTS / "report-synthetic_2rank.png"
    page.screenshot(path=str(shot), full_page=True)
    print(f"screenshot: {shot}")
    assert shot.stat().st_size > 10_000
    page.close()


def test_kernel_table_sorts_on_header_click(
    browser: Any, sample_summary: dict[str, Any], tmp_path: Path
) -> None:
    path = write_report(sample_summary, tmp_path / "report.html", plotlyjs="inline")
    page, errors = open_report(browser, path)
    col = "#kernel-table tbody tr td:nth-child(3)"  # calls

    def calls() -> list[float]:
        return [
            float(v) for v in page.eval_on_selector_all(col, "tds => tds.map(t => t.dataset.v)")
        ]

    before = calls()
    page.click("#kernel-table th:nth-child(3)")
    assert calls() == sorted(before)
    page.click("#kernel-table th:nth-child(3)")
    assert calls() == sorted(before, reverse=True)
    assert errors == []
    page.close()


def test_hostile_names_render_as_text_and_run_no_script(
    browser: Any, hostile_summary: dict[str, Any], tmp_path: Path
) -> None:
    path = write_report(hostile_summary, tmp_path / "hostile.html")
    page, errors = open_report(browser, path)
    assert page.evaluate("typeof window.__gpuscope_xss") == "undefined"
    assert page.locator("img").count() == 0
    kernels = page.inner_text("#kernel-table")
    for name in EVIL_KERNELS:
        assert name in kernels
    ranges = page.inner_text("#range-table")
    for name in EVIL_RANGES:
        assert name in ranges
    assert "host<img" in page.inner_text("#header")
    occupancy_labels = page.inner_text("#fig-occupancy")
    assert "evil_kernel<img" in occupancy_labels
    assert errors == []
    page.close()

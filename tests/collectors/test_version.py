"""gpuscope's version has one definition (:mod:`collectors.version`): the distribution's
metadata, the JSON summary, the trace cache's entries, a run's environment record and
``gpuscope version`` all give it."""

from __future__ import annotations

from importlib import metadata

from collectors.cache.hashing import versions
from collectors.version import VERSION
from profiler.environment import versions as run_versions
from reports.summary import build_summary
from tests.support.builders import trace_us
from tests.support.cli import gpuscope
from tests.support.env import REPO

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib


def test_pyproject_reads_the_version_from_its_one_definition() -> None:
    project = tomllib.loads((REPO / "pyproject.toml").read_text())
    assert "version" not in project["project"] and "version" in project["project"]["dynamic"]
    dynamic = project["tool"]["setuptools"]["dynamic"]["version"]
    assert dynamic == {"attr": "collectors.version.VERSION"}


def test_the_installed_distribution_summary_cache_and_command_give_it() -> None:
    assert metadata.version("gpuscope") == VERSION
    summary = build_summary([trace_us([("k", 7, 0, 5, 1)], [], [])])
    assert summary["tool"] == {"name": "gpuscope", "version": VERSION}
    assert versions()["tool_version"] == VERSION
    assert run_versions()["gpuscope"] == VERSION  # recorded by `gpuscope run`
    out = gpuscope("version")
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == f"gpuscope {VERSION}"

"""Traces that ``torch.profiler`` writes today (CPU build): fresh capture and committed sample."""

from __future__ import annotations

import importlib.util
import json
import re
from collections import Counter
from decimal import Decimal
from pathlib import Path
from typing import Any

from collectors.kineto import read_kineto
from tests.support.env import SAMPLES, require_service
from tests.support.raw_kineto import document
from tests.support.scripts import load_script

STEP = re.compile(r"^ProfilerStep#(\d+)")


def _has_torch() -> bool:
    return importlib.util.find_spec("torch") is not None


def _capture_module() -> Any:
    return load_script(SAMPLES / "capture_torch_cpu.py")


def _load(path: Path) -> dict[str, Any]:
    return document(path, exact=True)


def _ns(v: Any) -> int:
    return int((Decimal(v) * 1000).to_integral_value())


def _check_against_json(path: Path, steps: list[int]) -> None:
    """The reader's tables against the raw JSON of a CPU-only torch trace."""
    trace = read_kineto(path)
    doc = _load(path)
    acts = [
        e
        for e in doc["traceEvents"]
        if e.get("ph") == "X" and "dur" in e and e.get("cat") not in (None, "Trace")
    ]
    host = [e for e in acts if e["cat"] != "python_function"]
    assert trace.gpu.empty
    assert Counter(trace.host["cat"].astype(str)) == Counter(e["cat"] for e in host)
    assert Counter(trace.host["name"].astype(str)) == Counter(e["name"] for e in host)
    assert sorted(zip(trace.host["start_ns"], trace.host["end_ns"], strict=True)) == sorted(
        (_ns(e["ts"]), _ns(e["ts"]) + _ns(e["dur"])) for e in host
    )
    assert trace.steps()["step"].tolist() == steps
    assert {"aten::addmm", "aten::relu", "aten::mm"} <= set(trace.host["name"].astype(str))
    shapes = Counter(
        json.dumps(e["args"]["Input Dims"], separators=(",", ":"))
        for e in host
        if "Input Dims" in e.get("args", {})
    )
    assert Counter(trace.host["input_dims"].dropna()) == shapes
    mem = [e for e in doc["traceEvents"] if e.get("name") == "[memory]"]
    assert len(mem) > 0
    alloc = trace.counters[trace.counters["name"] == "Total Allocated"]
    assert sorted(zip(alloc["ts_ns"], alloc["value"], strict=True)) == sorted(
        (_ns(e["ts"]), float(e["args"]["Total Allocated"])) for e in mem
    )
    assert set(trace.counters["device"]) == {e["args"]["Device Id"] for e in mem}
    assert trace.meta.source_version == str(doc["schemaVersion"])


def test_a_fresh_cpu_capture_loads_with_its_ops_steps_and_memory(tmp_path: Path) -> None:
    require_service("torch", _has_torch(), "pip install torch (the CPU wheel is enough)")
    out = _capture_module().capture(tmp_path / "rank-0.json.gz", steps=5)
    # schedule(wait=1, warmup=1, active=3): steps #2, #3, #4 are recorded
    _check_against_json(out, steps=[2, 3, 4])
    assert read_kineto(out).meta.rank_source == "filename"


def test_the_committed_torch_cpu_sample_loads() -> None:
    _check_against_json(SAMPLES / "torch_cpu" / "rank-0.json.gz", steps=[2, 3, 4, 5])

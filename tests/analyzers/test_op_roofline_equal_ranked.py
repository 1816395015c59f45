"""The op roofline built with each point's time share and the peak table's ceilings looked up
once per precision, and its points' derived figures computed once
(:func:`analyzers.roofline.op_roofline`, ``RooflinePoint``'s cached properties), equals the
points built one by one and ranked by :func:`analyzers.roofline_points.rank_points`, on the
shared traces with input shapes, with and without a device peak."""

from __future__ import annotations

from types import MappingProxyType
from typing import Any

import pytest

from analyzers.gpu_peaks import find_peaks
from analyzers.op_models import op_costs, op_groups
from analyzers.roofline import OP_TIME_SOURCE, _op_key, op_roofline, roofline_coverage
from analyzers.roofline_points import Ceilings, RooflinePoint, rank_points, table_ceilings
from collectors.peaks import load_peaks
from tests.support.env import shared_path


def _ranked(groups: Any, peaks: Any, gpu_time_ns: int) -> list[RooflinePoint]:
    """The points as the replaced loop built them: every ceiling looked up, shares by
    rank_points."""
    points = []
    for row in groups.itertuples(index=False):
        ceil = Ceilings()
        prec = row.precision
        if peaks is not None:
            ceil = table_ceilings(peaks, prec if prec and prec.endswith("_tensor") else None)
        flop_key = "tensor" if prec and prec.endswith("_tensor") else (prec or "fp32")
        missing = [] if peaks is not None else ["ceilings: the device is not in the GPU peak table"]
        if row.host_copy:
            ceil = Ceilings()
            missing.append("copies to/from host memory: bound by the host link, not DRAM")
        points.append(
            RooflinePoint(
                key=_op_key(row),
                name=row.op,
                time_ns=float(row.kernel_time_ns) if row.kernel_time_ns > 0 else None,
                time_source=OP_TIME_SOURCE,
                flop=MappingProxyType({flop_key: float(row.flops)}),
                bytes=MappingProxyType({"dram": float(row.bytes)}),
                byte_sources=MappingProxyType({"dram": "op model: inputs + output, once"}),
                ceilings=ceil,
                calls=int(row.calls),
                missing=tuple(missing),
                tensor_precision=prec if flop_key == "tensor" else None,
                exact=bool(row.exact),
                model_note=str(row.note or ""),
            )
        )
    return rank_points(points, gpu_time_ns)


REAL = [
    ("hta", "negative_queue_length_values_check", "rank0.json.gz"),
    ("tracelens", "mi300", "Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz"),
    ("tracelens", "mi300", "google_owlv2-large-patch14-ensemble__1016001.json.gz"),
]


@pytest.mark.parametrize("parts", REAL, ids=[p[-1] for p in REAL])
@pytest.mark.parametrize("gpu", ["H100 SXM5 80 GB", "MI300X OAM 192 GB", None])
def test_shared_traces(parts: tuple[str, ...], gpu: str | None) -> None:
    from collectors.load import load_traces

    (t,) = load_traces([shared_path("kineto", *parts)])
    groups = op_groups(op_costs(t))
    peaks = find_peaks(load_peaks(None), gpu) if gpu else None
    got = op_roofline(groups, peaks)
    want = _ranked(groups, peaks, groups.attrs["gpu_time_ns"])
    assert list(got) == want
    assert [p.to_dict() for p in got] == [p.to_dict() for p in want]
    assert got.coverage == roofline_coverage(want, groups.attrs["gpu_time_ns"])

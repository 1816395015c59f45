"""The traces stage of the Nsight Systems reader: one export's tables → per-(process, device)
parts, and the ranks of the parts of every export read together → Traces.

One :class:`~collectors.model.Trace` per (process, device) that ran GPU work (a row in the
kernel, memcpy, memset or synchronization table).  An export with no GPU activity gives one
trace per process that made CUDA API calls (or a single trace), with a note in
``meta.extra["notes"]``.

Ranks (``meta.rank_source``):

* ``nsys`` — recorded by the run (:mod:`collectors.nsys.devices`: an ``MPI Rank N`` thread, or
  the launcher's rank variable in the captured environment), used when every trace has one and
  they are distinct;
* ``default`` — otherwise: traces ordered by file (natural order of the file names, so
  ``report.2`` < ``report.10``), then pid, then device id, and numbered from 0.

The same process's host rows are split between its devices by correlation (an API call goes
with the GPU work it launched; calls that launched none go with the lowest device id); its NVTX
ranges are copied to each of its device traces.  See ``docs/nsys.md`` for every field.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from collectors.model import DeviceInfo, Trace, TraceMeta, make_trace
from collectors.nsys.tables import Columns, ExportTables

NO_KERNELS_NOTE = (
    "no kernels in this export (CUPTI_ACTIVITY_KIND_KERNEL absent or empty): the kernel "
    "summary is empty"
)
NO_GPU_NOTE = (
    "no GPU activity in this export (no kernel, memcpy, memset or synchronization rows): "
    "one trace per process that made CUDA API calls"
)


@dataclass
class Part:
    """One future Trace before ranks are known."""

    path: Path
    order: int
    gpid: int
    pid: int
    device: int
    gpu: dict[str, Any]
    host: dict[str, Any]
    annotations: dict[str, Any]
    counters: dict[str, Any]
    devices: list[DeviceInfo]
    run_rank: int | None
    run_world: int | None
    base: dict[str, Any]
    extra: dict[str, Any] = field(default_factory=dict)


def _n(cols: Columns) -> int:
    return len(next(iter(cols.values()))) if cols else 0


def split_export(export: ExportTables, order: int) -> list[Part]:
    """One part per (process, device) of *export* (the *order*-th file read), ranks not yet
    assigned (:func:`assign_ranks`)."""
    path, gpu, host, nvtx = export.path, export.gpu, export.host, export.nvtx
    counters, gpus, procs, threads = export.counters, export.gpus, export.procs, export.threads
    base, mpi_ranks = export.base, export.mpi_ranks
    env_r, env_world = export.env_rank, export.env_world
    keys = _groups(gpu, host, nvtx)
    notes = [] if export.has_kernels else [NO_KERNELS_NOTE]
    if not _n(gpu):
        notes.append(NO_GPU_NOTE)
    notes += export.notes
    n_per_process: dict[int, int] = {}
    for g, _ in keys:
        n_per_process[g] = n_per_process.get(g, 0) + 1
    single_process = len(n_per_process) == 1
    host_device = _host_devices(gpu, host, keys)
    parts = []
    for gpid, dev in keys:
        pid, pname = procs.get(gpid, ((gpid >> 24) & 0xFFFFFF if gpid >= 0 else -1, None))
        run_rank = mpi_ranks.get(gpid) if n_per_process[gpid] == 1 else None
        if run_rank is None and single_process and n_per_process[gpid] == 1:
            run_rank = env_r
        own = [gpus[dev]] if dev in gpus else list(gpus.values())
        parts.append(
            Part(
                path=path,
                order=order,
                gpid=gpid,
                pid=pid,
                device=dev,
                gpu=_select(gpu, gpid, dev),
                host=_select(host, gpid, None, host_device, dev),
                annotations=_select(nvtx, gpid, None),
                counters=_select(counters, gpid, dev),
                devices=own,
                run_rank=run_rank,
                run_world=env_world,
                base=base,
                extra={
                    "nsys_version": base["nsys_version"],
                    "export_schema_version": base["source_version"],
                    "process": {"pid": pid, "name": pname, "global_pid": gpid},
                    "device_id": dev,
                    "threads": [
                        {"tid": t, "name": n} for t, n in sorted(threads.get(gpid, {}).items())
                    ],
                    "kernel_short_names": _short_names(gpu, gpid, dev),
                    "notes": list(notes),
                },
            )
        )
    return parts


def _groups(gpu: Columns, host: Columns, nvtx: Columns) -> list[tuple[int, int]]:
    """(globalPid, device) pairs that get a trace, in (pid, device) order."""
    if _n(gpu):
        pairs = pd.DataFrame({"g": gpu["_gpid"], "d": gpu["device"]}).drop_duplicates()
        keys = [(int(g), int(d)) for g, d in pairs.to_numpy()]
    else:
        procs = sorted(set(host["_gpid"].tolist()) if _n(host) else set())
        if not procs:
            procs = sorted(set(nvtx["_gpid"].tolist()) if _n(nvtx) else set()) or [-1]
        keys = [(int(g), -1) for g in procs]
    return sorted(keys, key=lambda k: ((k[0] >> 24) & 0xFFFFFF, k[0], k[1]))


def _host_devices(gpu: Columns, host: Columns, keys: list[tuple[int, int]]) -> np.ndarray | None:
    """Device each host row goes to (by correlation within its process), or None if trivial."""
    if not _n(host):
        return None
    lowest: dict[int, int] = {}
    for g, d in keys:
        lowest[g] = min(d, lowest.get(g, d))
    fallback = pd.Series(host["_gpid"]).map(lowest).fillna(-2).to_numpy(dtype=np.int64)
    if len(lowest) == len(keys):  # one device per process: no split needed
        return fallback
    links = pd.DataFrame(
        {"_gpid": gpu["_gpid"], "correlation": gpu["correlation"], "device": gpu["device"]}
    )
    links = links[links["correlation"] >= 0].drop_duplicates(["_gpid", "correlation"])
    calls = pd.DataFrame({"_gpid": host["_gpid"], "correlation": host["correlation"]})
    dev = calls.merge(links, how="left", on=["_gpid", "correlation"])["device"]
    dev_a = dev.to_numpy(dtype=np.float64)
    return np.where(np.isnan(dev_a), fallback, dev_a).astype(np.int64)


def _select(
    cols: Columns,
    gpid: int,
    device: int | None,
    row_device: np.ndarray | None = None,
    want_device: int | None = None,
) -> Columns:
    """Rows of one process (and device), without the helper columns (``_`` prefix)."""
    n = _n(cols)
    mask = np.ones(n, dtype=bool) if gpid < 0 or not n else (cols["_gpid"] == gpid)
    if device is not None and "device" in cols:
        mask &= cols["device"] == device
    if row_device is not None:
        mask &= row_device == want_device
    keep = mask.all()
    return {k: (v if keep else v[mask]) for k, v in cols.items() if not k.startswith("_")}


def _short_names(gpu: Columns, gpid: int, device: int) -> dict[str, str]:
    """``{demangled kernel name: shortName}`` for one trace's kernels."""
    if not _n(gpu) or "_short" not in gpu:
        return {}
    kind = gpu["kind"]
    mask = (
        (kind.codes == kind.categories.get_loc("kernel"))
        & (gpu["_gpid"] == gpid)
        & (gpu["device"] == device)
    )
    name, short = gpu["name"], gpu["_short"]
    width = len(short.categories) + 1
    key = name.codes[mask].astype(np.int64) * width + short.codes[mask].astype(np.int64) + 1
    return {
        str(name.categories[k // width]): str(short.categories[k % width - 1])
        for k in pd.unique(key).tolist()
        if k >= 0 and k % width > 0
    }


def assign_ranks(parts: list[Part]) -> list[Trace]:
    """The Traces of the parts of every export read together, ranks assigned across them
    (module docstring)."""
    parts = sorted(parts, key=lambda p: (p.order, p.pid, p.gpid, p.device))
    recorded = [p.run_rank for p in parts]
    from_run = all(r is not None for r in recorded) and len(set(recorded)) == len(recorded)
    worlds = {p.run_world for p in parts}
    world = len(parts)
    recorded_world = next(iter(worlds)) if len(worlds) == 1 else None
    if from_run and recorded_world is not None:
        world = max(world, int(recorded_world))
    traces = []
    for i, p in enumerate(parts):
        rank = int(p.run_rank) if from_run and p.run_rank is not None else i
        meta = TraceMeta(
            rank=rank,
            source_format="nsys",
            source_path=str(p.path),
            source_version=p.base["source_version"],
            world_size=world,
            rank_source="nsys" if from_run else "default",
            hostname=p.base["hostname"],
            base_time_ns=p.base["base_time_ns"],
            devices=p.devices,
            extra=p.extra,
        )
        traces.append(
            make_trace(
                meta,
                gpu=p.gpu or None,
                host=p.host or None,
                annotations=p.annotations or None,
                counters=p.counters or None,
            )
        )
    return sorted(traces, key=lambda t: t.rank)

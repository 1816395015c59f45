"""``gpuscope occupancy``, ``gpuscope roofline`` and ``gpuscope calibrate`` (kernel efficiency).

Definitions of every printed number: ``docs/efficiency.md``.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Annotated, Any

import typer

from collectors.errors import UsageError


def _fmt(x: float | None, scale: float = 1.0, digits: int = 2) -> str:
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return "-"
    return f"{x / scale:,.{digits}f}"


def _echo_json(obj: Any) -> None:
    typer.echo(json.dumps(obj, indent=1, allow_nan=False))


def _occupancy(
    arch: str,
    threads: int,
    regs: int,
    smem: int,
    dyn_smem: int,
    optin: bool | None,
    carveout: int,
    as_json: bool,
) -> None:
    from analyzers.arch import arch_limits
    from analyzers.occupancy import UNLIMITED, LaunchConfig, what_if

    lim = arch_limits(arch)
    cfg = LaunchConfig(threads, regs, smem, dyn_smem, optin, carveout)
    wi = what_if(lim, cfg)
    r = wi.base
    if as_json:
        out: dict[str, Any] = r.to_dict()
        out["what_if"] = {
            "suggestions": [
                {
                    "change": s.change,
                    "from": s.current,
                    "to": s.to,
                    "occupancy_pct": s.occupancy_pct,
                    "best": s.best,
                    "best_occupancy_pct": s.best_occupancy_pct,
                }
                for s in wi.suggestions
            ],
            "curves": {
                c.varied: {"values": list(c.values), "occupancy_pct": list(c.occupancy_pct)}
                for c in wi.curves
            },
        }
        _echo_json(out)
        return

    def lim_text(v: int) -> str:
        return "none" if v == UNLIMITED else str(v)

    limits = ", ".join(f"{k.replace('_', ' ')} {lim_text(v)}" for k, v in r.limits().items())
    lines = [
        f"{r.arch}: {threads} threads/block, {regs} registers/thread, "
        f"{smem} B static + {dyn_smem} B dynamic shared memory" + (" (opt-in)" if r.optin else ""),
        f"active blocks/SM  {r.active_blocks}   (limited by {', '.join(r.limiters)})",
        f"active warps/SM   {r.active_warps} of {r.max_warps}",
        f"occupancy         {r.occupancy_pct:.2f} %",
        f"limits (blocks/SM): {limits}",
        f"allocated per block: {r.alloc_regs_per_block} registers, "
        f"{r.alloc_smem_per_block} B shared memory (SM shared memory {r.smem_per_sm_config} B)",
    ]
    if wi.suggestions:
        lines.append("to raise occupancy:")
        lines += [f"  {s.text()}" for s in wi.suggestions]
    else:
        lines.append("no change of block size, registers or shared memory raises occupancy")
    typer.echo("\n".join(lines))


def _list_gpus(peaks_file: Path | None, as_json: bool) -> None:
    from collectors.peaks import PRECISIONS, load_peaks

    table = load_peaks(peaks_file)
    if as_json:
        _echo_json({"gpus": [g.to_dict() for g in table.gpus]})
        return
    keys = [f"{p}_tflops" for p in PRECISIONS] + ["mem_bw_gbs"]
    head = ["GPU", *[k.replace("_tflops", "").replace("_gbs", " GB/s") for k in keys]]
    rows = []
    for g in table.gpus:
        cells = [g.name]
        for k in keys:
            v = g.values.get(k)
            cells.append("-" if v is None else f"{v:g}" + (" [u]" if g.is_unverified(k) else ""))
        rows.append(cells)
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(len(head))]
    for r in [head, *rows]:
        typer.echo("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip())
    typer.echo("TFLOP/s (dense) and GB/s; [u] = unverified (reference/gpus.md)")


def _roofline(
    file: Path | None, gpu: str | None, peaks_file: Path | None, list_gpus: bool, as_json: bool
) -> None:
    if list_gpus:
        _list_gpus(peaks_file, as_json)
        return
    if file is None:
        raise UsageError("roofline needs an Nsight Compute CSV file (or --list-gpus)")
    from analyzers.gpu_peaks import peaks_named
    from analyzers.roofline import ncu_roofline
    from collectors.ncu import read_ncu_csv
    from collectors.peaks import load_peaks

    report = read_ncu_csv(file)
    peaks = peaks_named(load_peaks(peaks_file), gpu) if gpu else None
    roof = ncu_roofline(report, peaks)
    if as_json:
        out = roof.to_dict()
        out["warnings"] = list(report.warnings)
        _echo_json(out)
        return
    has_file_ceilings = any(
        src == "ncu file" for p in roof.points for src in p.ceilings.source.values()
    )
    where = ["ncu file"] if has_file_ceilings else []
    unverified = sorted({k for p in roof.points for k in p.ceilings.unverified})
    if peaks:
        marks = f"; [u] unverified: {', '.join(unverified)}" if unverified else ""
        where.append(f"{peaks.name} (peak table{marks})")
    typer.echo(
        f"{report.path}: {len(report.launches)} launch(es); ceilings: "
        + (", then ".join(where) if where else "none (name the GPU with --gpu)")
    )
    head = (
        "#",
        "kernel",
        "time ms",
        "GFLOP/s",
        "DRAM GB/s",
        "% BW",
        "FLOP/B",
        "bound",
        "% roof",
        "share",
    )
    rows = []
    for i, p in enumerate(roof.points, start=1):
        name = p.name if len(p.name) <= 48 else p.name[:45] + "..."
        rows.append(
            (
                str(i),
                name,
                _fmt(p.time_ns, 1e6, 3),
                _fmt(p.flops_per_s_total, 1e9, 1),
                _fmt(p.bandwidth.get("dram"), 1e9, 1),
                _fmt(p.pct_of_peak_bandwidth, 1.0, 1),
                _fmt(p.intensity.get("dram"), 1.0, 2),
                p.bound or "-",
                _fmt(p.pct_of_attainable, 1.0, 1),
                _fmt(p.time_share * 100 if p.time_share is not None else None, 1.0, 1) + " %",
            )
        )
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(len(head))]
    for r in [head, *rows]:
        typer.echo("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip())
    for m in roof.missing:
        typer.echo(f"note: not computed for any launch: {m}", err=True)
    for w in report.warnings:
        typer.echo(f"warning: {w}", err=True)


def _calibrate(output: Path | None, size_mb: int, n: int, as_json: bool) -> None:
    from profiler.backends.calibrate import calibrate

    cal = calibrate(size_bytes=size_mb * 1_000_000, n=n)
    if output is not None:
        output.write_text(cal.to_toml(), encoding="utf-8")
    if as_json:
        _echo_json(cal.to_dict())
        return
    typer.echo(f"{cal.device_name}")
    typer.echo(f"copy bandwidth   {cal.bandwidth_bytes_per_s / 1e9:,.1f} GB/s")
    for prec, v in cal.matmul_flops_per_s.items():
        typer.echo(f"matmul {prec:<12}{v / 1e12:,.1f} TFLOP/s")
    if output is not None:
        typer.echo(f"wrote {output} (use with --peaks)")


def register(app: typer.Typer) -> None:
    """Add ``occupancy``, ``roofline`` and ``calibrate`` to *app*."""

    @app.command("occupancy")
    def occupancy_cmd(
        arch: Annotated[str, typer.Option("--arch", help="target architecture, e.g. sm_90")],
        threads: Annotated[int, typer.Option("--threads", help="threads per block")],
        regs: Annotated[int, typer.Option("--regs", help="registers per thread (0 = unknown)")] = 0,
        smem: Annotated[
            int, typer.Option("--smem", help="static shared memory per block, bytes")
        ] = 0,
        dyn_smem: Annotated[
            int, typer.Option("--dyn-smem", help="dynamic shared memory per block, bytes")
        ] = 0,
        optin: Annotated[
            bool | None,
            typer.Option(
                "--optin/--no-optin", help="kernel opted in to >48 KiB (default: when it needs to)"
            ),
        ] = None,
        carveout: Annotated[
            int, typer.Option("--carveout", help="shared-memory carveout in %, -1 = default")
        ] = -1,
        as_json: Annotated[bool, typer.Option("--json", help="print JSON")] = False,
    ) -> None:
        """Theoretical occupancy of a launch configuration, its limiters and what would raise it."""
        _occupancy(arch, threads, regs, smem, dyn_smem, optin, carveout, as_json)

    @app.command("roofline")
    def roofline_cmd(
        file: Annotated[
            Path | None, typer.Argument(help="Nsight Compute CSV export (ncu --csv)")
        ] = None,
        gpu: Annotated[
            str | None, typer.Option("--gpu", help="GPU whose peaks fill ceilings the file lacks")
        ] = None,
        peaks: Annotated[
            Path | None, typer.Option("--peaks", help="TOML file overriding the GPU peak table")
        ] = None,
        list_gpus: Annotated[
            bool, typer.Option("--list-gpus", help="print the GPU peak table")
        ] = False,
        as_json: Annotated[bool, typer.Option("--json", help="print JSON")] = False,
    ) -> None:
        """Roofline of the kernels in an Nsight Compute CSV export."""
        _roofline(file, gpu, peaks, list_gpus, as_json)

    @app.command("calibrate")
    def calibrate_cmd(
        output: Annotated[
            Path | None, typer.Option("-o", "--output", help="write the result as a peaks TOML")
        ] = None,
        size_mb: Annotated[int, typer.Option("--size-mb", help="copy buffer size, MB")] = 1024,
        n: Annotated[int, typer.Option("--n", help="matmul size n (n x n)")] = 8192,
        as_json: Annotated[bool, typer.Option("--json", help="print JSON")] = False,
    ) -> None:
        """Measure achievable memory bandwidth and matmul throughput of the local GPU."""
        _calibrate(output, size_mb, n, as_json)

"""``gpuscope occupancy``, ``gpuscope roofline`` and ``gpuscope calibrate`` (kernel efficiency).

Definitions of every printed number: ``docs/efficiency.md``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer

from cli.outputs import ForceOpt
from collectors.errors import UsageError


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
    from reports.efficiency_console import occupancy_json, occupancy_lines

    lim = arch_limits(arch)
    wi = what_if(lim, LaunchConfig(threads, regs, smem, dyn_smem, optin, carveout))
    if as_json:
        _echo_json(occupancy_json(wi.base, wi))
        return
    lines = occupancy_lines(
        wi.base, wi, threads=threads, regs=regs, smem=smem, dyn_smem=dyn_smem, unlimited=UNLIMITED
    )
    typer.echo("\n".join(lines))


def _list_gpus(peaks_file: Path | None, as_json: bool) -> None:
    from collectors.peaks import PRECISIONS, load_peaks
    from reports.efficiency_console import gpu_peak_lines

    table = load_peaks(peaks_file)
    if as_json:
        _echo_json({"gpus": [g.to_dict() for g in table.gpus]})
        return
    for line in gpu_peak_lines(table, tuple(PRECISIONS)):
        typer.echo(line)


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
    from reports.efficiency_console import ncu_roofline_lines

    report = read_ncu_csv(file)
    peaks = peaks_named(load_peaks(peaks_file), gpu) if gpu else None
    roof = ncu_roofline(report, peaks)
    if as_json:
        out = roof.to_dict()
        out["warnings"] = list(report.warnings)
        _echo_json(out)
        return
    lines, notes = ncu_roofline_lines(report, roof, peaks)
    for line in lines:
        typer.echo(line)
    for line in notes:
        typer.echo(line, err=True)


def _calibrate(output: Path | None, size_mb: int, n: int, as_json: bool, force: bool) -> None:
    from profiler.backends.calibrate import calibrate
    from reports.output import check_output, write_atomic

    if output is not None:
        check_output(output, force=force)
    cal = calibrate(size_bytes=size_mb * 1_000_000, n=n)
    if output is not None:
        write_atomic(output, cal.to_toml(), force=force, what="peaks TOML")
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
        force: ForceOpt = False,
    ) -> None:
        """Measure achievable memory bandwidth and matmul throughput of the local GPU."""
        _calibrate(output, size_mb, n, as_json, force)

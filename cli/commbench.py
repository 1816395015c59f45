"""``gpuscope commbench``: measure collectives with torch.distributed, nccl-tests style.

Launch on every rank with torchrun, e.g.::

    torchrun --nproc_per_node 8 -m cli.main commbench --sizes 1M:1G --json bench.json
    torchrun --nproc_per_node 8 --no-python gpuscope commbench

Rank 0 prints the table in nccl-tests' layout (so ``gpuscope nccl-tests`` reads it back) and
writes the JSON (the same document as ``gpuscope nccl-tests --json``); the other ranks print
nothing.  Definitions: docs/communication.md §9.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, Any

import typer

from cli.outputs import ForceOpt
from collectors.errors import MissingDependencyError, UsageError
from reports.output import check_output, write_atomic

COLL_HELP = (
    "Comma list of collectives, or 'all' (all_reduce, all_gather, reduce_scatter, "
    "all_to_all, broadcast)."
)
SIZES_HELP = (
    "Message sizes S (bytes, K/M/G binary): MIN:MAX doubling, MIN:MAX:FACTOR, or a comma list."
)
JSON_HELP = "Write the results as JSON to FILE (rank 0 only)."
BACKEND_HELP = "torch.distributed backend: auto (nccl with CUDA, else gloo), nccl or gloo."


def _init(backend: str) -> tuple[Any, bool]:
    """Initialize the default process group from torchrun's environment; (torch, we_did)."""
    from profiler.backends.commbench import torch_distributed

    torch = torch_distributed()
    dist = torch.distributed
    if dist.is_initialized():
        return torch, False
    if "WORLD_SIZE" not in os.environ or "RANK" not in os.environ:
        raise UsageError(
            "commbench measures collectives between processes: launch it on every rank with "
            "torchrun, e.g. 'torchrun --nproc_per_node 2 -m cli.main commbench'"
        )
    if backend == "auto":
        backend = "nccl" if torch.cuda.is_available() else "gloo"
    if backend == "nccl":
        if not torch.cuda.is_available():
            raise MissingDependencyError("--backend nccl needs CUDA GPUs; use --backend gloo")
        torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", "0")))
    elif backend != "gloo":
        raise UsageError(f"--backend must be auto, nccl or gloo, not {backend!r}")
    try:
        dist.init_process_group(backend=backend)
    except (RuntimeError, ValueError) as e:
        raise UsageError(f"cannot initialize torch.distributed ({backend}): {e}") from None
    return torch, True


def run_commbench_cli(
    collectives: str = "all",
    sizes: str = "1K:1G",
    iters: int = 20,
    warmup: int = 5,
    dtype: str = "float",
    backend: str = "auto",
    check: bool = True,
    json_out: Path | None = None,
    force: bool = False,
) -> int:
    """The command's work on one rank; returns the exit code.

    Raises:
        UsageError: bad options, not launched by torchrun, a JSON file that exists (without
            *force*) or cannot be written.
        MissingDependencyError: torch (or CUDA for nccl) absent.
    """
    from profiler.backends.commbench import (
        BenchConfig,
        format_text,
        parse_collectives,
        parse_sizes,
        run_commbench,
    )

    if iters < 1 or warmup < 0:
        raise UsageError("--iters must be ≥ 1 and --warmup ≥ 0")
    if json_out is not None:  # every rank: they stop together, before any collective
        check_output(json_out, force=force)
    config = BenchConfig(
        collectives=parse_collectives(collectives),
        sizes=parse_sizes(sizes),
        iters=iters,
        warmup=warmup,
        dtype=dtype,
        check=check,
    )
    torch, ours = _init(backend)
    try:
        logs = run_commbench(config)
        if torch.distributed.get_rank() != 0:
            return 0
        if json_out is not None:
            import json

            from reports.summary.sections.comm import nccl_tests_json

            doc = nccl_tests_json(logs, source="commbench")
            text = json.dumps(doc, indent=1, allow_nan=False) + "\n"
            write_atomic(json_out, text, force=force, what="commbench JSON")
        typer.echo(format_text(logs), nl=False)
        if json_out is not None:
            typer.echo(f"Wrote {json_out}")
        return 0
    finally:
        if ours:
            torch.distributed.destroy_process_group()


def register(app: typer.Typer) -> None:
    """Add ``commbench`` to *app*."""

    @app.command("commbench")
    def commbench(
        collectives: Annotated[
            str, typer.Option("--collectives", metavar="LIST", help=COLL_HELP)
        ] = "all",
        sizes: Annotated[str, typer.Option("--sizes", metavar="MIN:MAX", help=SIZES_HELP)] = (
            "1K:1G"
        ),
        iters: Annotated[int, typer.Option("--iters", help="Timed calls per size.")] = 20,
        warmup: Annotated[int, typer.Option("--warmup", help="Untimed calls first.")] = 5,
        dtype: Annotated[
            str,
            typer.Option(
                "--dtype",
                help="Element type (float, half, bfloat16, double, int32, int64, int8, uint8).",
            ),
        ] = ("float"),
        backend: Annotated[str, typer.Option("--backend", help=BACKEND_HELP)] = "auto",
        check: Annotated[
            bool, typer.Option("--check/--no-check", help="Verify one result per size.")
        ] = True,
        json_out: Annotated[
            Path | None, typer.Option("--json", metavar="FILE", help=JSON_HELP)
        ] = None,
        force: ForceOpt = False,
    ) -> int:
        """Measure NCCL/gloo collectives like nccl-tests (run under torchrun on every rank).

        Prints time, algbw = S/time and busbw = algbw × factor per collective and size, in
        nccl-tests' layout; --json writes the same document as 'gpuscope nccl-tests --json'.
        """
        return run_commbench_cli(
            collectives, sizes, iters, warmup, dtype, backend, check, json_out, force
        )

"""Where the tasks run: a pool of ``spawn`` worker processes on this machine, or a Dask
distributed cluster (docs/scale.md §1)."""

from __future__ import annotations

import contextlib
import os
import pickle
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from collectors import errors as errors_mod
from collectors.errors import UsageError
from reports.summary.planning import Unit
from reports.summary.tasks import (
    FileError,
    UnitResult,
    internal_error,
    run_unit_in_worker,
    unit_path,
)

if TYPE_CHECKING:
    from concurrent.futures import Future


def run_local(
    units: list[Unit],
    args: tuple[Any, ...],
    workers: int,
    done: Callable[[UnitResult], None],
) -> None:
    """Run the tasks in a pool of *workers* spawned processes, largest inputs first."""
    import multiprocessing
    from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
    from concurrent.futures.process import BrokenProcessPool

    order = sorted(range(len(units)), key=lambda i: -unit_bytes(units[i]))
    pending = list(order)
    ctx = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=workers, mp_context=ctx) as ex:
        futs: dict[Future[UnitResult], int] = {
            ex.submit(run_unit_in_worker, units[i], i, *args): i for i in pending
        }
        broken: list[int] = []
        while futs:
            finished, _ = wait(list(futs), return_when=FIRST_COMPLETED)
            for f in finished:
                i = futs.pop(f)
                try:
                    done(f.result())
                except BrokenProcessPool:
                    broken.append(i)
                except Exception as e:  # the task's arguments or result failed to pickle
                    done(UnitResult(index=i, error=internal_error(units[i], e)))
    # a worker died (killed for memory?): retry those inputs one at a time, alone
    for i in broken:
        with ProcessPoolExecutor(max_workers=1, mp_context=ctx) as ex:
            try:
                done(ex.submit(run_unit_in_worker, units[i], i, *args).result())
            except BrokenProcessPool:
                done(
                    UnitResult(
                        index=i,
                        error=FileError(
                            unit_path(units[i]),
                            "the worker process died while analysing it (out of memory?)",
                            "InputError",
                        ),
                    )
                )


def picklable(value: Any) -> bool:
    try:
        pickle.dumps(value, protocol=5)
    except Exception:
        return False
    return True


def unit_bytes(unit: Unit) -> int:
    with contextlib.suppress(OSError):
        return sum(p.stat().st_size for p in (*unit.paths, *unit.reps))
    return 0


def run_dask(
    address: str,
    units: list[Unit],
    args: tuple[Any, ...],
    done: Callable[[UnitResult], None],
) -> int:
    """Run the tasks on the Dask cluster at *address*; returns its number of worker threads."""
    try:
        from distributed import Client, as_completed
    except ImportError as e:  # pragma: no cover - dask is a dependency
        raise errors_mod.MissingDependencyError(
            "--scheduler needs dask[distributed]: pip install 'dask[distributed]'"
        ) from e
    try:
        client = Client(address, timeout="10s", set_as_default=False)
    except (OSError, TimeoutError, ValueError) as e:
        raise UsageError(f"cannot connect to the Dask scheduler at {address}: {e}") from None
    with client:
        threads = sum(client.nthreads().values())
        run_id = os.urandom(6).hex()
        try:
            futures = [
                client.submit(
                    run_unit_in_worker, u, i, *args, pure=False, key=f"gpuscope-{run_id}-{i}"
                )
                for i, u in enumerate(units)
            ]
        except Exception as e:  # arguments Dask cannot serialize
            raise UsageError(
                f"cannot send the analysis to the Dask cluster ({type(e).__name__}: {e})"
            ) from None
        index = {f.key: i for i, f in enumerate(futures)}
        for fut in as_completed(futures, loop=client.loop):
            i = index[fut.key]
            try:
                done(fut.result())
            except Exception as e:  # KilledWorker, lost connection...
                done(
                    UnitResult(
                        index=i,
                        error=FileError(
                            unit_path(units[i]),
                            f"the Dask task failed ({type(e).__name__}: {e})",
                            "InputError",
                        ),
                    )
                )
    return threads

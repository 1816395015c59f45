"""Facts about the process being profiled: rank, host, versions, GPUs, git commit.

Every function here is best-effort: a fact that cannot be read is ``None``, never an exception.
Nothing imports torch; torch facts are read only when the program already imported it.
"""

from __future__ import annotations

import os
import platform
import socket
import subprocess
import sys
from typing import Any

from collectors.version import VERSION


def _int_env(*names: str) -> int | None:
    for n in names:
        v = os.environ.get(n)
        if v is not None:
            try:
                return int(v)
            except ValueError:
                continue
    return None


def rank_info() -> dict[str, Any]:
    """``rank``, ``local_rank``, ``world_size`` and where they came from.

    Order: the launcher's environment (torchrun's ``RANK``/``LOCAL_RANK``/``WORLD_SIZE``; Slurm
    and Open MPI equivalents), then an initialised ``torch.distributed``, then rank 0 of 1.
    """
    rank = _int_env("RANK", "SLURM_PROCID", "OMPI_COMM_WORLD_RANK", "PMI_RANK")
    local = _int_env("LOCAL_RANK", "SLURM_LOCALID", "OMPI_COMM_WORLD_LOCAL_RANK")
    world = _int_env("WORLD_SIZE", "SLURM_NTASKS", "OMPI_COMM_WORLD_SIZE", "PMI_SIZE")
    source = "env" if rank is not None else "default"
    if rank is None:
        dist = _torch_dist()
        if dist is not None:
            rank, world, source = dist.get_rank(), dist.get_world_size(), "torch.distributed"
    return {
        "rank": rank if rank is not None else 0,
        "local_rank": local if local is not None else 0,
        "world_size": world if world is not None else 1,
        "rank_source": source,
    }


def _torch_dist() -> Any:
    torch = sys.modules.get("torch")
    if torch is None:
        return None
    try:
        dist = torch.distributed
        if dist.is_available() and dist.is_initialized():
            return dist
    except Exception:
        return None
    return None


def hostname() -> str:
    """The short host name (names the per-node counter file)."""
    try:
        return socket.gethostname().split(".")[0] or "localhost"
    except Exception:
        return "localhost"


def versions() -> dict[str, str | None]:
    """Python, gpuscope, and — if the program imported torch — torch, CUDA, cuDNN, NCCL."""
    out: dict[str, str | None] = {"python": platform.python_version(), "gpuscope": VERSION}
    torch = sys.modules.get("torch")
    out.update({"torch": None, "cuda": None, "cudnn": None, "nccl": None})
    if torch is None:
        return out
    try:
        out["torch"] = str(torch.__version__)
        out["cuda"] = torch.version.cuda
        if torch.backends.cudnn.is_available():
            out["cudnn"] = str(torch.backends.cudnn.version())
        if torch.cuda.is_available():
            v = torch.cuda.nccl.version()
            out["nccl"] = ".".join(map(str, v)) if isinstance(v, tuple) else str(v)
    except Exception:
        pass
    return out


def torch_gpus() -> list[dict[str, Any]]:
    """The CUDA devices torch sees (only if the program already initialised CUDA)."""
    torch = sys.modules.get("torch")
    if torch is None:
        return []
    try:
        if not torch.cuda.is_initialized():
            return []
        gpus = []
        for i in range(torch.cuda.device_count()):
            p = torch.cuda.get_device_properties(i)
            gpus.append(
                {
                    "index": i,
                    "name": p.name,
                    "uuid": str(getattr(p, "uuid", "")) or None,
                    "compute_capability": f"{p.major}.{p.minor}",
                    "sm_count": p.multi_processor_count,
                    "total_memory_bytes": int(p.total_memory),
                }
            )
        return gpus
    except Exception:
        return []


def current_cuda_device() -> int | None:
    """The CUDA device this process uses, if torch initialised CUDA."""
    torch = sys.modules.get("torch")
    try:
        if torch is not None and torch.cuda.is_initialized():
            return int(torch.cuda.current_device())
    except Exception:
        pass
    return None


def git_info(cwd: str | None = None) -> dict[str, Any] | None:
    """``{"commit", "dirty"}`` of the git checkout at *cwd*, or None outside one."""
    try:
        commit = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=cwd, capture_output=True, text=True, timeout=5
        )
        if commit.returncode != 0:
            return None
        status = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=5,
        )
        return {"commit": commit.stdout.strip(), "dirty": bool(status.stdout.strip())}
    except Exception:
        return None

"""The testbed a run was measured on, and its fingerprint (docs/gating.md §5).

Runs are compared only within one fingerprint: the SHA-256 of the canonical JSON of GPU model
× count, nodes, driver, CUDA, NCCL, torch and gpuscope versions and any extra ``--env`` facts.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from collectors.errors import UsageError
from collectors.summary.schema import Summary

ENV_FIELDS = ("gpu_model", "gpu_count", "nodes", "driver", "cuda", "nccl", "torch")
"""The fields of an environment besides the gpuscope version and the extra facts."""


@dataclass(frozen=True)
class Environment:
    """The testbed a run was measured on; runs are compared only within one fingerprint."""

    gpu_model: str | None = None
    gpu_count: int | None = None
    nodes: int | None = None
    driver: str | None = None
    cuda: str | None = None
    nccl: str | None = None
    torch: str | None = None
    gpuscope_version: str | None = None
    extra: Mapping[str, str] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["extra"] = dict(sorted(self.extra.items()))
        return d

    @property
    def fingerprint(self) -> str:
        """SHA-256 (hex) of the canonical JSON of every field."""
        blob = json.dumps(self.as_dict(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(blob.encode()).hexdigest()

    def describe(self) -> str:
        """Short human form: ``8× NVIDIA H100, 1 node(s), driver 550.54``."""
        parts = [f"{self.gpu_count or '?'}× {self.gpu_model or 'unknown GPU'}"]
        if self.nodes is not None:
            parts.append(f"{self.nodes} node(s)")
        parts += [
            f"{k} {getattr(self, k)}"
            for k in ("driver", "cuda", "nccl", "torch")
            if getattr(self, k) is not None
        ]
        parts.append(f"gpuscope {self.gpuscope_version}")
        parts += [f"{k}={v}" for k, v in sorted(self.extra.items())]
        return ", ".join(parts)

    def differences(self, other: Environment) -> list[str]:
        """``field: mine → other`` for each field that differs."""
        a, b = self.as_dict(), other.as_dict()
        out = [f"{k}: {a[k]} → {b[k]}" for k in a if k != "extra" and a[k] != b[k]]
        for k in sorted(set(a["extra"]) | set(b["extra"])):
            if a["extra"].get(k) != b["extra"].get(k):
                out.append(f"{k}: {a['extra'].get(k)} → {b['extra'].get(k)}")
        return out


def environment_record(env: Environment) -> dict[str, Any]:
    """The environment as the verdict document shows it: every field and the fingerprint."""
    return {**env.as_dict(), "fingerprint": env.fingerprint}


def _count(value: str) -> int | None:
    return int(value) if value.strip().isdigit() else None


def environment_from_summary(
    summary: Summary, overrides: Mapping[str, str] | None = None
) -> Environment:
    """The environment of a summary: its ``environment`` object where present, else what the
    summary shows — the most common ``ranks[].device.name``, the number of ranks, the number
    of distinct ``run.ranks[].hostname``, ``tool.version``; *overrides* (``--env KEY=VALUE``)
    win, and keys that are not fields go to ``extra``.

    Raises:
        UsageError: a count field (gpu_count, nodes) overridden with a non-integer.
    """
    env = summary.get("environment", {})
    ranks = summary["ranks"]
    names = Counter(
        d["name"] for r in ranks if (d := r["device"]) is not None and d["name"] is not None
    )
    run = summary.get("run")
    hosts = {r["hostname"] for r in run["ranks"] if r["hostname"]} if run is not None else set()
    values: dict[str, Any] = {
        "gpu_model": env.get("gpu_model") or (names.most_common(1)[0][0] if names else None),
        "gpu_count": env.get("gpu_count") or (len(ranks) or None),
        "nodes": env.get("nodes") or (len(hosts) or None),
        "driver": env.get("driver"),
        "cuda": env.get("cuda"),
        "nccl": env.get("nccl"),
        "torch": env.get("torch"),
        "gpuscope_version": summary["tool"]["version"],
    }
    extra: dict[str, str] = {}
    for key, value in (overrides or {}).items():
        if key in ("gpu_count", "nodes"):
            count = _count(value)
            if count is None:
                raise UsageError(f"--env {key}={value}: {key} must be an integer")
            values[key] = count
        elif key in (*ENV_FIELDS, "gpuscope_version"):
            values[key] = value
        else:
            extra[key] = value
    return Environment(**values, extra=extra)

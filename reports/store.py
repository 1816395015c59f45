"""The run-history store: recorded runs, their metrics and per-step samples, gate verdicts.

``open_store(spec)`` takes a SQLAlchemy URL (``postgresql+psycopg://...``, ``sqlite:///...``) or a
plain file path (an SQLite file, created on first use).  The schema is migrated with Alembic
(``reports/migrations``) on open, under a lock (SQLite: the database write lock taken by
``BEGIN IMMEDIATE``; PostgreSQL: a transaction-scoped advisory lock), so concurrent first uses
are safe.  SQLite runs in WAL mode with a busy timeout.  Each write is one transaction: a run is
recorded whole or not at all.

A run's environment fingerprint (:class:`Environment`) is the SHA-256 of GPU model × count,
nodes, driver, CUDA, NCCL, torch and gpuscope versions and any extra ``--env`` facts.  The
baseline of a (benchmark, branch) is the last K runs of its **latest segment**: the newest
run and the runs before it with the same fingerprint, back to the first fingerprint change.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlalchemy import Engine, create_engine, event, func, select, text
from sqlalchemy import exc as sa_exc
from sqlalchemy.engine import URL, make_url
from sqlalchemy.orm import Session, sessionmaker

from analyzers.gate_metrics import METRICS, CallStats, MetricValue
from collectors.errors import InputError, MissingDependencyError, UsageError
from reports.store_models import Measurement, Run, Sample, Testbed, Verdict

if TYPE_CHECKING:
    import pandas as pd

    from analyzers.gate import GateResult

MIGRATIONS = Path(__file__).with_name("migrations")
SQLITE_BUSY_TIMEOUT_MS = 60_000
PG_CONNECT_TIMEOUT_S = 10
_PG_MIGRATION_LOCK = 0x67707363  # "gpsc": pg_advisory_xact_lock key of the migration step

ENV_FIELDS = ("gpu_model", "gpu_count", "nodes", "driver", "cuda", "nccl", "torch")
HISTORY_COLUMNS = (
    "run_id",
    "name",
    "branch",
    "commit_sha",
    "recorded_at",
    "fingerprint",
    "key",
    "metric",
    "unit",
    "direction",
    "value",
)
"""Columns of :meth:`Store.history`."""
VERDICT_COLUMNS = (
    "created_at",
    "name",
    "branch",
    "commit_sha",
    "key",
    "status",
    "current",
    "baseline",
    "effect",
    "p_value",
    "reason",
)
"""Columns of :meth:`Store.verdicts`."""


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


def _int_or_none(x: Any) -> int | None:
    if isinstance(x, bool):
        return None
    if isinstance(x, int):
        return x
    if isinstance(x, str) and x.strip().isdigit():
        return int(x)
    return None


def environment_from_summary(
    summary: Mapping[str, Any], overrides: Mapping[str, str] | None = None
) -> Environment:
    """The environment of a summary: its ``environment`` object where present, else what the
    summary shows (most common ``ranks[].device.name``, number of ranks, distinct
    ``ranks[].hostname``, ``tool.version``); *overrides* (``--env KEY=VALUE``) win, and keys
    that are not fields go to ``extra``.

    Raises:
        UsageError: a count field (gpu_count, nodes) overridden with a non-integer.
    """
    env = summary.get("environment")
    env = env if isinstance(env, Mapping) else {}
    ranks = [r for r in summary.get("ranks") or [] if isinstance(r, Mapping)]
    names = Counter(
        d["name"]
        for r in ranks
        if isinstance(d := r.get("device"), Mapping) and isinstance(d.get("name"), str)
    )
    hosts = {r["hostname"] for r in ranks if isinstance(r.get("hostname"), str)}
    tool = summary.get("tool")
    values: dict[str, Any] = {
        "gpu_model": env.get("gpu_model") or (names.most_common(1)[0][0] if names else None),
        "gpu_count": _int_or_none(env.get("gpu_count")) or (len(ranks) or None),
        "nodes": _int_or_none(env.get("nodes")) or (len(hosts) or None),
        **{k: str(env[k]) for k in ("driver", "cuda", "nccl", "torch") if env.get(k) is not None},
        "gpuscope_version": tool.get("version") if isinstance(tool, Mapping) else None,
    }
    extra: dict[str, str] = {}
    for key, value in (overrides or {}).items():
        if key in ("gpu_count", "nodes"):
            if _int_or_none(value) is None:
                raise UsageError(f"--env {key}={value}: {key} must be an integer")
            values[key] = int(value)
        elif key in (*ENV_FIELDS, "gpuscope_version"):
            values[key] = value
        else:
            extra[key] = value
    return Environment(**values, extra=extra)


def _env_of(tb: Testbed) -> Environment:
    return Environment(
        gpu_model=tb.gpu_model,
        gpu_count=tb.gpu_count,
        nodes=tb.nodes,
        driver=tb.driver,
        cuda=tb.cuda,
        nccl=tb.nccl,
        torch=tb.torch,
        gpuscope_version=tb.gpuscope_version,
        extra=dict(tb.extra or {}),
    )


@dataclass(frozen=True)
class BaselineRuns:
    """The runs a candidate is compared with (newest first) and the segment they come from."""

    runs: tuple[dict[str, MetricValue], ...]
    run_ids: tuple[int, ...]
    commits: tuple[str | None, ...]
    segment_env: Environment | None
    """Environment of the latest segment (None: no run of the benchmark on the branch)."""
    mismatch: tuple[str, ...] = ()
    """How the candidate's environment differs from the latest segment's (then ``runs=()``)."""


def to_url(spec: str) -> URL:
    """A store spec as a SQLAlchemy URL: URLs as given, anything else an SQLite file path.

    Raises:
        UsageError: a malformed URL.
        InputError: an SQLite path whose folder does not exist.
    """
    if "://" in spec:
        try:
            return make_url(spec)
        except sa_exc.ArgumentError as err:
            raise UsageError(f"--store {spec!r} is not a database URL: {err}") from err
    path = Path(spec).expanduser().resolve()
    if not path.parent.is_dir():
        raise InputError("folder of the SQLite store does not exist", path=path)
    return make_url(f"sqlite:///{path}")


def _sqlite_events(engine: Engine) -> None:
    """WAL, busy timeout, foreign keys; every transaction ``BEGIN IMMEDIATE`` (writer lock
    up front, so concurrent writers queue on the busy timeout instead of deadlocking)."""

    @event.listens_for(engine, "connect")
    def _connect(dbapi_conn: Any, _rec: Any) -> None:
        dbapi_conn.isolation_level = None  # we issue BEGIN ourselves
        cur = dbapi_conn.cursor()
        cur.execute(f"PRAGMA busy_timeout = {SQLITE_BUSY_TIMEOUT_MS}")
        cur.execute("PRAGMA journal_mode = WAL")
        cur.execute("PRAGMA foreign_keys = ON")
        cur.close()

    @event.listens_for(engine, "begin")
    def _begin(conn: Any) -> None:
        conn.exec_driver_sql("BEGIN IMMEDIATE")


def _first_line(err: BaseException) -> str:
    orig = getattr(err, "orig", None) or err
    lines = [ln.strip() for ln in str(orig).strip().splitlines() if ln.strip()]
    return lines[0] if lines else type(orig).__name__


class Store:
    """An open store; use :func:`open_store`.  Methods raise :class:`InputError` on database
    errors (naming the store), never a driver exception."""

    def __init__(self, engine: Engine, display: str) -> None:
        self.engine = engine
        self.display = display
        self._sessions = sessionmaker(engine, expire_on_commit=False)

    # --- plumbing ---------------------------------------------------------------------------
    @contextmanager
    def _tx(self) -> Iterator[Session]:
        """One transaction; any database error rolls it back and becomes an InputError."""
        try:
            with self._sessions() as s, s.begin():
                yield s
        except sa_exc.SQLAlchemyError as err:
            raise InputError(f"store error: {_first_line(err)}", path=self.display) from err

    def close(self) -> None:
        self.engine.dispose()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _migrate(self) -> None:
        from alembic import command
        from alembic.config import Config
        from alembic.runtime.migration import MigrationContext
        from alembic.script import ScriptDirectory

        cfg = Config()
        cfg.set_main_option("script_location", str(MIGRATIONS))
        head = ScriptDirectory.from_config(cfg).get_current_head()
        try:
            with self.engine.begin() as conn:
                if conn.dialect.name == "postgresql":
                    conn.execute(
                        text("SELECT pg_advisory_xact_lock(:k)"), {"k": _PG_MIGRATION_LOCK}
                    )
                current = MigrationContext.configure(conn).get_current_revision()
                if current == head:
                    return
                known = {s.revision for s in ScriptDirectory.from_config(cfg).walk_revisions()}
                if current is not None and current not in known:
                    raise InputError(
                        f"store schema revision {current} is newer than this gpuscope "
                        f"(knows up to {head}); upgrade gpuscope",
                        path=self.display,
                    )
                cfg.attributes["connection"] = conn
                command.upgrade(cfg, "head")
        except sa_exc.SQLAlchemyError as err:
            raise InputError(
                f"cannot open the store: {_first_line(err)}", path=self.display
            ) from err

    # --- writing ----------------------------------------------------------------------------
    def _testbed_id(self, s: Session, env: Environment) -> int:
        """Id of the environment's testbed row, inserting it if new (safe under concurrency)."""
        row = {
            "fingerprint": env.fingerprint,
            **{k: getattr(env, k) for k in (*ENV_FIELDS, "gpuscope_version")},
            "extra": dict(env.extra) or None,
        }
        if s.get_bind().dialect.name == "postgresql":
            from sqlalchemy.dialects.postgresql import insert
        else:
            from sqlalchemy.dialects.sqlite import insert
        s.execute(
            insert(Testbed).values(**row).on_conflict_do_nothing(index_elements=["fingerprint"])
        )
        q = select(Testbed.id).where(Testbed.fingerprint == env.fingerprint)
        return int(s.execute(q).scalar_one())

    def record(
        self,
        metrics: Mapping[str, MetricValue],
        *,
        name: str,
        env: Environment,
        branch: str | None = None,
        commit: str | None = None,
        summary_sha256: str | None = None,
        recorded_at: datetime | None = None,
    ) -> int:
        """Record one run with its metrics and samples in one transaction; returns its id."""
        when = recorded_at or datetime.now(timezone.utc)
        with self._tx() as s:
            run = Run(
                name=name,
                branch=branch,
                commit_sha=commit,
                recorded_at=when,
                testbed_id=self._testbed_id(s, env),
                summary_sha256=summary_sha256,
            )
            s.add(run)
            rows = []
            for m in metrics.values():
                meas = Measurement(
                    key=m.key,
                    metric=m.metric,
                    unit=m.spec.unit,
                    direction=m.spec.direction,
                    value=float(m.value),
                    weight=float(m.rank_by),
                    n=m.stats.n if m.stats else None,
                    mean=m.stats.mean if m.stats else None,
                    std=m.stats.std if m.stats else None,
                )
                run.measurements.append(meas)
                rows.append((meas, m.samples))
            s.flush()
            samples = [
                {"measurement_id": meas.id, "idx": i, "value": float(v)}
                for meas, vals in rows
                for i, v in enumerate(vals)
            ]
            if samples:
                s.execute(Sample.__table__.insert(), samples)
            return run.id

    def save_verdicts(
        self, result: GateResult, *, name: str, branch: str | None, commit: str | None
    ) -> None:
        """Store the gate's verdicts (one transaction) so that history can mark them."""
        now = datetime.now(timezone.utc)
        with self._tx() as s:
            for v in result.verdicts:
                s.add(
                    Verdict(
                        created_at=now,
                        name=name,
                        branch=branch,
                        commit_sha=commit,
                        key=v.key,
                        status=v.status,
                        current=v.current,
                        baseline=v.baseline,
                        effect=_finite(v.effect),
                        p_value=v.p_value,
                        baseline_run_ids=list(result.baseline_run_ids),
                        reason=v.reason,
                    )
                )

    # --- reading ----------------------------------------------------------------------------
    def names(self, branch: str | None = None) -> list[str]:
        """Benchmark names with at least one run (on *branch* when given)."""
        q = select(Run.name).distinct().order_by(Run.name)
        if branch is not None:
            q = q.where(Run.branch == branch)
        with self._tx() as s:
            return list(s.scalars(q))

    def run_count(self) -> int:
        """Number of recorded runs."""
        with self._tx() as s:
            return int(s.execute(select(func.count(Run.id))).scalar_one())

    def baseline(self, name: str, branch: str, env: Environment, k: int) -> BaselineRuns:
        """The last *k* runs of (name, branch)'s latest segment, newest first; empty with
        ``mismatch`` when the candidate's *env* is not the latest segment's."""
        with self._tx() as s:
            q = (
                select(Run, Testbed)
                .join(Testbed, Run.testbed_id == Testbed.id)
                .where(Run.name == name, Run.branch == branch)
                .order_by(Run.recorded_at.desc(), Run.id.desc())
                .limit(k)
            )
            rows = [tuple(r) for r in s.execute(q)]
            if not rows:
                return BaselineRuns((), (), (), None)
            latest_tb = rows[0][1]
            seg_env = _env_of(latest_tb)
            if latest_tb.fingerprint != env.fingerprint:
                return BaselineRuns((), (), (), seg_env, tuple(env.differences(seg_env)))
            seg = []
            for run, tb in rows:
                if tb.id != latest_tb.id:
                    break
                seg.append(run)
            ids = [r.id for r in seg]
            metrics = self._metrics_of(s, ids)
            return BaselineRuns(
                runs=tuple(metrics[i] for i in ids),
                run_ids=tuple(ids),
                commits=tuple(r.commit_sha for r in seg),
                segment_env=seg_env,
            )

    def _metrics_of(self, s: Session, run_ids: Sequence[int]) -> dict[int, dict[str, MetricValue]]:
        out: dict[int, dict[str, MetricValue]] = {i: {} for i in run_ids}
        meas = list(s.scalars(select(Measurement).where(Measurement.run_id.in_(run_ids))))
        samples: dict[int, list[tuple[int, float]]] = {}
        if meas:
            q = select(Sample).where(Sample.measurement_id.in_([m.id for m in meas]))
            for smp in s.scalars(q):
                samples.setdefault(smp.measurement_id, []).append((smp.idx, smp.value))
        for m in meas:
            if m.metric not in METRICS:
                continue
            vals = tuple(v for _, v in sorted(samples.get(m.id, [])))
            stats = CallStats(int(m.n), float(m.mean), float(m.std)) if m.n is not None else None
            out[m.run_id][m.key] = MetricValue(
                key=m.key,
                metric=m.metric,
                value=m.value,
                samples=vals,
                stats=stats,
                rank_by=m.weight,
            )
        return out

    def history(
        self, name: str | None = None, branch: str | None = None, metric: str | None = None
    ) -> pd.DataFrame:
        """One row per (run, series): run_id, name, branch, commit_sha, recorded_at,
        fingerprint, environment, key, metric, unit, direction, value; by time then id.

        *metric* matches a series key exactly or a metric name (all its series)."""
        q = (
            select(
                Run.id,
                Run.name,
                Run.branch,
                Run.commit_sha,
                Run.recorded_at,
                Testbed.fingerprint,
                Measurement.key,
                Measurement.metric,
                Measurement.unit,
                Measurement.direction,
                Measurement.value,
            )
            .join(Testbed, Run.testbed_id == Testbed.id)
            .join(Measurement, Measurement.run_id == Run.id)
            .order_by(Run.recorded_at, Run.id, Measurement.key)
        )
        if name is not None:
            q = q.where(Run.name == name)
        if branch is not None:
            q = q.where(Run.branch == branch)
        if metric is not None:
            q = q.where((Measurement.key == metric) | (Measurement.metric == metric))
        import pandas as pd

        with self._tx() as s:
            return pd.DataFrame([tuple(r) for r in s.execute(q)], columns=list(HISTORY_COLUMNS))

    def verdicts(self, name: str | None = None) -> pd.DataFrame:
        """Stored gate verdicts: created_at, name, branch, commit_sha, key, status, current,
        baseline, effect, p_value, reason."""
        q = select(*(getattr(Verdict, c) for c in VERDICT_COLUMNS)).order_by(
            Verdict.created_at, Verdict.id
        )
        if name is not None:
            q = q.where(Verdict.name == name)
        import pandas as pd

        with self._tx() as s:
            return pd.DataFrame([tuple(r) for r in s.execute(q)], columns=list(VERDICT_COLUMNS))


def _finite(x: float | None) -> float | None:
    return x if x is None or (x == x and abs(x) != float("inf")) else None


def open_store(spec: str) -> Store:
    """Open (creating and migrating as needed) the store at a URL or SQLite path.

    Raises:
        UsageError: a malformed URL or an unsupported database.
        MissingDependencyError: the database driver is not installed.
        InputError: the database cannot be reached or is not a gpuscope store.
    """
    url = to_url(spec)
    display = url.render_as_string(hide_password=True)
    backend = url.get_backend_name()
    if backend not in ("sqlite", "postgresql"):
        raise UsageError(
            f"--store {display}: unsupported database {backend!r} (use SQLite or PostgreSQL)"
        )
    kwargs: dict[str, Any] = {}
    if backend == "sqlite":
        kwargs["connect_args"] = {"timeout": SQLITE_BUSY_TIMEOUT_MS / 1000}
    else:
        kwargs["connect_args"] = {"connect_timeout": PG_CONNECT_TIMEOUT_S}
        kwargs["pool_pre_ping"] = True
    try:
        engine = create_engine(url, **kwargs)
    except sa_exc.NoSuchModuleError as err:
        raise UsageError(f"--store {display}: unknown database driver: {err}") from err
    except ImportError as err:
        raise MissingDependencyError(f"--store {display}: database driver missing: {err}") from err
    if backend == "sqlite":
        _sqlite_events(engine)
    store = Store(engine, display)
    try:
        store._migrate()
    except BaseException:
        engine.dispose()
        raise
    return store

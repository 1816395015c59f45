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

import sqlite3
import time
import warnings
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlalchemy import Engine, create_engine, event, func, select, text
from sqlalchemy import exc as sa_exc
from sqlalchemy.engine import URL, make_url
from sqlalchemy.orm import Session, sessionmaker

from analyzers.gate.baseline import BaselineRuns, StoredRun, latest_segment
from analyzers.gate.environment import ENV_FIELDS, Environment
from analyzers.gate.metrics import METRICS, MetricValue
from analyzers.gate.statistics import CallStats
from collectors.errors import InputError, MissingDependencyError, UsageError
from reports.store_models import Measurement, Run, Sample, Testbed, Verdict

if TYPE_CHECKING:
    import pandas as pd

    from analyzers.gate.verdicts import GateResult

MIGRATIONS = Path(__file__).with_name("migrations")
SQLITE_BUSY_TIMEOUT_MS = 60_000
PG_CONNECT_TIMEOUT_S = 10
_PG_MIGRATION_LOCK = 0x67707363  # "gpsc": pg_advisory_xact_lock key of the migration step

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


def to_url(spec: str) -> URL:
    """A store spec as a SQLAlchemy URL: URLs as given, anything else an SQLite file path.

    Raises:
        UsageError: a malformed URL, or an in-memory SQLite database (it would keep nothing).
        InputError: an SQLite path whose folder does not exist.
    """
    if "://" in spec:
        try:
            url = make_url(spec)
        except sa_exc.ArgumentError as err:
            raise UsageError(f"--store {spec!r} is not a database URL: {err}") from err
        if _in_memory(url):
            raise UsageError(
                f"--store {url.render_as_string(hide_password=True)}: an in-memory SQLite "
                "database keeps nothing after the command; give a file (sqlite:///path.db, "
                "or a path)"
            )
        return url
    path = Path(spec).expanduser().resolve()
    if not path.parent.is_dir():
        raise InputError("folder of the SQLite store does not exist", path=path)
    return make_url(f"sqlite:///{path}")


def _in_memory(url: URL) -> bool:
    """An SQLite URL without a file (``sqlite://``, ``:memory:``, ``file::memory:``, or
    ``mode=memory``)."""
    if url.get_backend_name() != "sqlite":
        return False
    db = url.database or ""
    return (
        db in ("", ":memory:")
        or db.startswith("file::memory:")
        or (url.query.get("mode") == "memory")
    )


def _engine(url: URL, display: str, **kwargs: Any) -> Engine:
    """``create_engine``, with a URL option the driver does not understand refused in one line
    (SQLAlchemy would warn over several lines and ignore it)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", sa_exc.SAWarning)
        engine = create_engine(url, **kwargs)
    for w in caught:
        if issubclass(w.category, sa_exc.SAWarning):
            engine.dispose()
            why = str(w.message).split(" (Background on this warning", 1)[0].strip()
            raise UsageError(f"--store {display}: {why}")
        warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    return engine


def _enter_wal(cur: Any) -> None:
    """Put the database in WAL mode, retrying while another connection holds a lock.

    Changing the journal mode needs an exclusive lock, and SQLite answers "database is locked"
    at once, without its busy handler, when that could deadlock with another writer -- as when
    several processes open a fresh store together.  The mode is persistent, so a database already
    in WAL is left alone; otherwise the change is retried with backoff up to the busy timeout.
    """
    delay, deadline = 0.001, time.monotonic() + SQLITE_BUSY_TIMEOUT_MS / 1000
    while True:
        try:
            if cur.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
                cur.execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError as err:
            if "locked" not in str(err) or time.monotonic() >= deadline:
                raise
            time.sleep(delay)
            delay = min(2 * delay, 0.05)


def _sqlite_events(engine: Engine) -> None:
    """WAL, busy timeout, foreign keys; every transaction ``BEGIN IMMEDIATE`` (writer lock
    up front, so concurrent writers queue on the busy timeout instead of deadlocking)."""

    @event.listens_for(engine, "connect")
    def _connect(dbapi_conn: Any, _rec: Any) -> None:
        dbapi_conn.isolation_level = None  # we issue BEGIN ourselves
        cur = dbapi_conn.cursor()
        cur.execute(f"PRAGMA busy_timeout = {SQLITE_BUSY_TIMEOUT_MS}")
        _enter_wal(cur)
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
        ``mismatch`` when the candidate's *env* is not the latest segment's (the choice is
        :func:`analyzers.gate.baseline.latest_segment`)."""
        with self._tx() as s:
            q = (
                select(Run, Testbed)
                .join(Testbed, Run.testbed_id == Testbed.id)
                .where(Run.name == name, Run.branch == branch)
                .order_by(Run.recorded_at.desc(), Run.id.desc())
                .limit(k)
            )
            newest = [
                StoredRun(run.id, run.commit_sha, tb.id, tb.fingerprint, _env_of(tb))
                for run, tb in s.execute(q)
            ]
            seg = latest_segment(newest, env)
            metrics = self._metrics_of(s, seg.run_ids) if seg.run_ids else {}
            return BaselineRuns(
                runs=tuple(metrics[i] for i in seg.run_ids),
                run_ids=seg.run_ids,
                commits=seg.commits,
                segment_env=seg.env,
                mismatch=seg.mismatch,
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
        engine = _engine(url, display, **kwargs)
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

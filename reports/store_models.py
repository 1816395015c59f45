"""SQLAlchemy 2 models of the run-history store (docs/gating.md §5).

Portable SQL only (SQLite and PostgreSQL).  The schema is created and upgraded by Alembic
(``reports/migrations``); a change here needs a new revision there.

* ``testbed``     one row per environment fingerprint (GPU model × count, nodes, driver, CUDA,
                  NCCL, torch, gpuscope version); ``fingerprint`` is the SHA-256 of those fields.
* ``run``         one recorded summary: benchmark name, branch, commit, time, testbed.
* ``measurement`` one series of a run (``step_time_ns``, ``kernel_time_ns[gemm]``, ...): its
                  value, unit, direction, and the per-call statistics when it has them.
* ``sample``      the per-step samples of a measurement, in step order.
* ``verdict``     one gate decision for one series (what ``gpuscope history`` marks).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    DateTime,
    Double,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Text,
    UniqueConstraint,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship

NAMING = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}
"""Deterministic constraint names, so migrations name them the same on every backend."""


class Base(DeclarativeBase):
    """Declarative base of the store's tables."""

    metadata = MetaData(naming_convention=NAMING)


class Testbed(Base):
    __tablename__ = "testbed"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    fingerprint: Mapped[str] = mapped_column(String(64), unique=True)
    gpu_model: Mapped[str | None] = mapped_column(String(200))
    gpu_count: Mapped[int | None] = mapped_column(Integer)
    nodes: Mapped[int | None] = mapped_column(Integer)
    driver: Mapped[str | None] = mapped_column(String(100))
    cuda: Mapped[str | None] = mapped_column(String(100))
    nccl: Mapped[str | None] = mapped_column(String(100))
    torch: Mapped[str | None] = mapped_column(String(100))
    gpuscope_version: Mapped[str | None] = mapped_column(String(100))
    extra: Mapped[dict[str, Any] | None] = mapped_column(JSON)


class Run(Base):
    __tablename__ = "run"
    __table_args__ = (Index("ix_run_name_branch_time", "name", "branch", "recorded_at", "id"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(200))
    branch: Mapped[str | None] = mapped_column(String(255))
    commit_sha: Mapped[str | None] = mapped_column(String(64))
    recorded_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    testbed_id: Mapped[int] = mapped_column(ForeignKey("testbed.id"))
    summary_sha256: Mapped[str | None] = mapped_column(String(64))

    testbed: Mapped[Testbed] = relationship()
    measurements: Mapped[list[Measurement]] = relationship(
        back_populates="run", cascade="all, delete-orphan"
    )


class Measurement(Base):
    __tablename__ = "measurement"
    __table_args__ = (UniqueConstraint("run_id", "key"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    run_id: Mapped[int] = mapped_column(ForeignKey("run.id", ondelete="CASCADE"), index=True)
    key: Mapped[str] = mapped_column(Text)
    metric: Mapped[str] = mapped_column(String(64))
    unit: Mapped[str] = mapped_column(String(16))
    direction: Mapped[str] = mapped_column(String(8))
    value: Mapped[float] = mapped_column(Double)
    weight: Mapped[float] = mapped_column(Double, default=0.0)
    """Ordering among series of one metric (kernels: total time in ns)."""
    n: Mapped[int | None] = mapped_column(BigInteger)
    mean: Mapped[float | None] = mapped_column(Double)
    std: Mapped[float | None] = mapped_column(Double)

    run: Mapped[Run] = relationship(back_populates="measurements")
    samples: Mapped[list[Sample]] = relationship(
        order_by="Sample.idx", cascade="all, delete-orphan"
    )


class Sample(Base):
    __tablename__ = "sample"

    measurement_id: Mapped[int] = mapped_column(
        ForeignKey("measurement.id", ondelete="CASCADE"), primary_key=True
    )
    idx: Mapped[int] = mapped_column(Integer, primary_key=True)
    value: Mapped[float] = mapped_column(Double)


class Verdict(Base):
    __tablename__ = "verdict"
    __table_args__ = (Index("ix_verdict_name_time", "name", "created_at"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    name: Mapped[str] = mapped_column(String(200))
    branch: Mapped[str | None] = mapped_column(String(255))
    """The baseline's branch."""
    commit_sha: Mapped[str | None] = mapped_column(String(64))
    """The candidate's commit, when given."""
    key: Mapped[str] = mapped_column(Text)
    status: Mapped[str] = mapped_column(String(16))
    current: Mapped[float | None] = mapped_column(Double)
    baseline: Mapped[float | None] = mapped_column(Double)
    effect: Mapped[float | None] = mapped_column(Double)
    p_value: Mapped[float | None] = mapped_column(Double)
    baseline_run_ids: Mapped[list[int] | None] = mapped_column(JSON)
    reason: Mapped[str | None] = mapped_column(Text)

"""Initial schema: testbed, run, measurement, sample, verdict.

Revision ID: 0001
Revises:
Create Date: 2026-11-30
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "testbed",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("fingerprint", sa.String(length=64), nullable=False),
        sa.Column("gpu_model", sa.String(length=200), nullable=True),
        sa.Column("gpu_count", sa.Integer(), nullable=True),
        sa.Column("nodes", sa.Integer(), nullable=True),
        sa.Column("driver", sa.String(length=100), nullable=True),
        sa.Column("cuda", sa.String(length=100), nullable=True),
        sa.Column("nccl", sa.String(length=100), nullable=True),
        sa.Column("torch", sa.String(length=100), nullable=True),
        sa.Column("gpuscope_version", sa.String(length=100), nullable=True),
        sa.Column("extra", sa.JSON(), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_testbed")),
        sa.UniqueConstraint("fingerprint", name=op.f("uq_testbed_fingerprint")),
    )
    op.create_table(
        "verdict",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("branch", sa.String(length=255), nullable=True),
        sa.Column("commit_sha", sa.String(length=64), nullable=True),
        sa.Column("key", sa.Text(), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("current", sa.Double(), nullable=True),
        sa.Column("baseline", sa.Double(), nullable=True),
        sa.Column("effect", sa.Double(), nullable=True),
        sa.Column("p_value", sa.Double(), nullable=True),
        sa.Column("baseline_run_ids", sa.JSON(), nullable=True),
        sa.Column("reason", sa.Text(), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_verdict")),
    )
    op.create_index("ix_verdict_name_time", "verdict", ["name", "created_at"])
    op.create_table(
        "run",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("branch", sa.String(length=255), nullable=True),
        sa.Column("commit_sha", sa.String(length=64), nullable=True),
        sa.Column("recorded_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("testbed_id", sa.Integer(), nullable=False),
        sa.Column("summary_sha256", sa.String(length=64), nullable=True),
        sa.ForeignKeyConstraint(
            ["testbed_id"], ["testbed.id"], name=op.f("fk_run_testbed_id_testbed")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_run")),
    )
    op.create_index("ix_run_name_branch_time", "run", ["name", "branch", "recorded_at", "id"])
    op.create_table(
        "measurement",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("run_id", sa.Integer(), nullable=False),
        sa.Column("key", sa.Text(), nullable=False),
        sa.Column("metric", sa.String(length=64), nullable=False),
        sa.Column("unit", sa.String(length=16), nullable=False),
        sa.Column("direction", sa.String(length=8), nullable=False),
        sa.Column("value", sa.Double(), nullable=False),
        sa.Column("weight", sa.Double(), nullable=False),
        sa.Column("n", sa.BigInteger(), nullable=True),
        sa.Column("mean", sa.Double(), nullable=True),
        sa.Column("std", sa.Double(), nullable=True),
        sa.ForeignKeyConstraint(
            ["run_id"], ["run.id"], name=op.f("fk_measurement_run_id_run"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_measurement")),
        sa.UniqueConstraint("run_id", "key", name=op.f("uq_measurement_run_id")),
    )
    op.create_index(op.f("ix_measurement_run_id"), "measurement", ["run_id"])
    op.create_table(
        "sample",
        sa.Column("measurement_id", sa.Integer(), nullable=False),
        sa.Column("idx", sa.Integer(), nullable=False),
        sa.Column("value", sa.Double(), nullable=False),
        sa.ForeignKeyConstraint(
            ["measurement_id"],
            ["measurement.id"],
            name=op.f("fk_sample_measurement_id_measurement"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("measurement_id", "idx", name=op.f("pk_sample")),
    )


def downgrade() -> None:
    op.drop_table("sample")
    op.drop_index(op.f("ix_measurement_run_id"), table_name="measurement")
    op.drop_table("measurement")
    op.drop_index("ix_run_name_branch_time", table_name="run")
    op.drop_table("run")
    op.drop_index("ix_verdict_name_time", table_name="verdict")
    op.drop_table("verdict")
    op.drop_table("testbed")

"""commbench for real: two processes on the gloo backend, launched by torchrun.

The table it prints is read back with the nccl-tests parser, which rechecks every algbw/busbw
against size/time; the test also recomputes them itself, and checks that gloo returned the
expected results (``#wrong`` = 0) and that the JSON matches the text.
"""

from __future__ import annotations

import importlib.util
import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from collectors.errors import UsageError
from collectors.nccl_tests import parse_nccl_tests_text
from profiler.backends.commbench import parse_collectives, parse_sizes
from tests.support.env import REPO, require_service

pytestmark = pytest.mark.torch

FACTOR_2_RANKS = {  # nccl-tests bus factors for n = 2
    "all_reduce": 1.0,
    "all_gather": 0.5,
    "reduce_scatter": 0.5,
    "all_to_all": 0.5,
    "broadcast": 1.0,
}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env.update(OMP_NUM_THREADS="1", PYTHONWARNINGS="ignore")
    for k in ("WORLD_SIZE", "RANK", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT"):
        env.pop(k, None)
    return env


@pytest.fixture(scope="module")
def bench(tmp_path_factory: pytest.TempPathFactory) -> tuple[subprocess.CompletedProcess, Path]:
    require_service(
        "torch", importlib.util.find_spec("torch") is not None, "pip install the CPU build of torch"
    )
    out = tmp_path_factory.mktemp("commbench") / "bench.json"
    cmd = [
        sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2",
        "--master_addr", "127.0.0.1", "--master_port", str(_free_port()),
        "-m", "cli.main", "commbench", "--sizes", "1K:8K", "--iters", "3", "--warmup", "1",
        "--json", str(out),
    ]  # fmt: skip
    proc = subprocess.run(
        cmd, cwd=REPO, env=_env(), capture_output=True, text=True, timeout=300, check=False
    )
    return proc, out


def test_two_gloo_ranks_produce_an_nccl_tests_table(bench: tuple) -> None:
    proc, _ = bench
    assert proc.returncode == 0, proc.stderr[-3000:]
    logs = parse_nccl_tests_text(proc.stdout, "commbench.out")
    assert [lg.collective for lg in logs] == list(FACTOR_2_RANKS)
    for log in logs:
        assert (log.nranks, log.nranks_source, log.collective_source) == (2, "devices", "header")
        assert log.devices == ("CPU", "CPU")
        assert log.warnings == () and log.checked_ok
        measured = log.rows.dropna(subset=["time_us"])
        assert len(measured) == 4  # 1K, 2K, 4K, 8K; one placement each
        assert measured["size_bytes"].tolist() == [1024, 2048, 4096, 8192]
        assert (measured["wrong"] == 0).all()  # gloo's results were exactly as expected
        assert measured["busbw_ok"].all()
        for r in measured.itertuples():
            # the printed values, recomputed here: algbw = S / t, busbw = algbw × factor
            algbw = r.size_bytes / (r.time_us * 1e3)
            tol = 0.005 + algbw * 0.05 / r.time_us  # bandwidth and time printed rounded
            assert abs(r.algbw_gbps - algbw) <= tol
            assert abs(r.busbw_gbps - algbw * FACTOR_2_RANKS[log.collective]) <= tol


def test_counts_follow_nccl_tests_definitions(bench: tuple) -> None:
    proc, _ = bench
    logs = {lg.collective: lg for lg in parse_nccl_tests_text(proc.stdout, "commbench.out")}
    per_rank = {"all_gather", "reduce_scatter", "all_to_all"}
    for coll, log in logs.items():
        r = log.rows.dropna(subset=["time_us"])
        want = r["size_bytes"] // (4 * (2 if coll in per_rank else 1))  # float32 elements
        assert r["count"].tolist() == want.tolist()


def test_json_holds_the_same_rows_and_peaks(bench: tuple) -> None:
    proc, out = bench
    doc = json.loads(out.read_text())
    assert doc["source"] == "commbench" and doc["schema_version"] == 1
    assert [lg["collective"] for lg in doc["logs"]] == list(FACTOR_2_RANKS)
    text = {lg.collective: lg for lg in parse_nccl_tests_text(proc.stdout, "x")}
    for lg in doc["logs"]:
        assert lg["nranks"] == 2 and lg["params"]["backend"] == "gloo"
        rows = [r for r in lg["rows"] if r["time_us"] is not None]
        printed = text[lg["collective"]].rows.dropna(subset=["time_us"])
        for r, p in zip(rows, printed.itertuples(), strict=True):
            assert abs(r["busbw_gbps"] - p.busbw_gbps) <= 0.005 + 1e-12
    assert {(p["collective"], p["size_bytes"]) for p in doc["peak"]} == {
        (c, s) for c in FACTOR_2_RANKS for s in (1024, 2048, 4096, 8192)
    }


def test_without_torchrun_the_command_says_how_to_launch() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "cli.main", "commbench", "--sizes", "1K"],
        cwd=REPO, env=_env(), capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert proc.returncode == 2
    assert "torchrun" in proc.stderr and "Traceback" not in proc.stderr


@pytest.mark.parametrize(
    ("spec", "sizes"),
    [
        ("1K:8K", (1024, 2048, 4096, 8192)),
        ("1K:64K:4", (1024, 4096, 16384, 65536)),
        ("8,1M,1.5K", (8, 1 << 20, 1536)),
        ("1G", (1 << 30,)),
    ],
)
def test_size_specs(spec: str, sizes: tuple[int, ...]) -> None:
    assert parse_sizes(spec) == sizes


@pytest.mark.parametrize(
    "spec", ["1G:1K", "0:1K", "1K:1M:1", "1X", "1:2:3:4", ",".join(["1K"] * 65)]
)
def test_bad_size_specs_are_usage_errors(spec: str) -> None:
    with pytest.raises(UsageError):
        parse_sizes(spec)


def test_collective_lists() -> None:
    assert parse_collectives("allreduce,AllGather,all_reduce") == ("all_reduce", "all_gather")
    assert parse_collectives("all")[0] == "all_reduce"
    with pytest.raises(UsageError, match="unknown collective 'gather'"):
        parse_collectives("gather")

"""The parse cache: exact round trips on the shared traces, staleness and corruption rebuilt."""

from __future__ import annotations

import json
import math
import os
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from analyzers.collectives import collectives_table
from collectors import model
from collectors.cache import (
    CACHE_ENV,
    TraceCache,
    UnencodableError,
    cache_dir,
    dumps_exact,
    loads_exact,
    read_kineto_cached,
    read_nsys_cached,
    table_from_arrow,
    table_to_arrow,
)
from collectors.errors import InputError
from collectors.kineto import read_kineto
from collectors.model import Trace, TraceMeta, make_trace
from collectors.nsys import read_nsys_files
from tests.support.env import SHARED_DATA, shared_path

TABLES = ("gpu", "host", "annotations", "counters")


def _kineto_files() -> list[Path]:
    root = SHARED_DATA / "kineto" / "hta"
    if not root.is_dir():
        return []
    files = sorted(p for p in root.rglob("*") if p.name.endswith((".json", ".json.gz")))
    return [p for p in files if "execution_trace/benchmark_simple_add_et" not in str(p)]


def _nsys_files() -> list[Path]:
    root = SHARED_DATA / "nsys"
    return sorted(root.glob("*.sqlite")) if root.is_dir() else []


def same_value(a: Any, b: Any) -> bool:
    """Equal with the same types all the way down (NaN equals NaN)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        return (math.isnan(a) and math.isnan(b)) or a == b
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(same_value(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict):
        return list(a) == list(b) and all(
            same_value(k, k2) and same_value(a[k], b[k2]) for k, k2 in zip(a, b, strict=True)
        )
    return bool(a == b)


def assert_same_table(a: pd.DataFrame, b: pd.DataFrame, what: str) -> None:
    assert list(a.columns) == list(b.columns), what
    assert isinstance(b.index, pd.RangeIndex) and a.index.equals(b.index), what
    for c in a.columns:
        x, y = a[c], b[c]
        assert repr(x.dtype) == repr(y.dtype), (what, c, x.dtype, y.dtype)
        if isinstance(x.dtype, pd.CategoricalDtype):
            assert repr(x.cat.categories.dtype) == repr(y.cat.categories.dtype), (what, c)
            assert list(x.cat.categories) == list(y.cat.categories), (what, c)
            assert x.cat.codes.dtype == y.cat.codes.dtype, (what, c)
            assert np.array_equal(x.cat.codes.to_numpy(), y.cat.codes.to_numpy()), (what, c)
        elif x.dtype == np.dtype(object) or not isinstance(x.dtype, np.dtype):
            assert all(same_value(u, v) for u, v in zip(x, y, strict=True)), (what, c)
        else:
            assert np.array_equal(x.to_numpy(), y.to_numpy(), equal_nan=x.dtype.kind == "f"), (
                what,
                c,
            )


def assert_same_trace(a: Trace, b: Trace) -> None:
    assert a.meta == b.meta
    assert same_value(a.meta.extra, b.meta.extra)
    for name in TABLES:
        assert_same_table(getattr(a, name), getattr(b, name), name)


class Counting:
    """A reader that counts its calls."""

    def __init__(self, read: Any) -> None:
        self.read = read
        self.calls = 0

    def __call__(self) -> list[Trace]:
        self.calls += 1
        return self.read()  # type: ignore[no-any-return]


@pytest.fixture
def cache(tmp_path: Path) -> TraceCache:
    return TraceCache(tmp_path / "cache")


@pytest.fixture
def small_trace(tmp_path: Path) -> Path:
    src = shared_path("kineto", "hta", "nccl_parser_config", "nccl_data.json.gz")
    dst = tmp_path / "in" / "nccl_data.json.gz"
    dst.parent.mkdir()
    shutil.copyfile(src, dst)
    return dst


def _entry_files(cache: TraceCache) -> list[Path]:
    return sorted(p for d in cache.traces.entries() for p in d.iterdir())


# --------------------------------------------------------------------------------------------
# exact round trips on real data


@pytest.mark.parametrize("path", _kineto_files(), ids=lambda p: p.parent.name + "/" + p.name)
def test_every_shared_kineto_trace_round_trips_exactly(path: Path, cache: TraceCache) -> None:
    fresh = read_kineto(path)
    read = Counting(lambda: [fresh])
    _, o1 = cache.load("kineto", [path], read)
    again, o2 = cache.load("kineto", [path], read)
    assert (o1.status, o2.status, read.calls) == ("built", "hit", 1)
    assert len(again) == 1
    assert_same_trace(fresh, again[0])


def test_shared_kineto_set_is_present() -> None:
    files = _kineto_files()
    if not files:
        pytest.skip("shared Kineto traces not present")
    assert len(files) >= 20


@pytest.mark.parametrize("path", _nsys_files(), ids=lambda p: p.name[:40])
def test_every_shared_nsys_export_round_trips_exactly(path: Path, cache: TraceCache) -> None:
    fresh = read_nsys_files([path], [])
    _, o1 = read_nsys_cached([path], [], cache)
    again, o2 = read_nsys_cached([path], [], cache)
    assert (o1.status, o2.status) == ("built", "hit")
    assert len(again) == len(fresh)
    for a, b in zip(fresh, again, strict=True):
        assert_same_trace(a, b)


def test_object_columns_with_dicts_round_trip_on_a_trace_with_comm_metadata(
    small_trace: Path, cache: TraceCache
) -> None:
    fresh = read_kineto(small_trace)
    dicts = [v for v in fresh.gpu["comm_args"] if isinstance(v, dict)]
    assert dicts  # the fixture carries NCCL metadata on kernels
    read_kineto_cached(small_trace, cache)
    (got,), outcome = read_kineto_cached(small_trace, cache)
    assert outcome.status == "hit"
    assert_same_trace(fresh, got)


def test_collectives_derived_from_a_cached_trace_equal_the_fresh_ones(
    small_trace: Path, cache: TraceCache
) -> None:
    fresh = read_kineto(small_trace)
    read_kineto_cached(small_trace, cache)
    (got,), _ = read_kineto_cached(small_trace, cache)
    pd.testing.assert_frame_equal(
        collectives_table(fresh), collectives_table(got), check_exact=True
    )


# --------------------------------------------------------------------------------------------
# values the tables never held so far, and what cannot be stored


def test_exact_json_keeps_tuples_int_keys_big_ints_nan_and_tag_like_keys() -> None:
    value = {
        "t": (1, (2, "x"), [3.5, None]),
        "big": 10159970886766084423,
        "neg0": -0.0,
        "nan": float("nan"),
        "b": True,
        "ints": {1: "a", (2, 3): "b"},
        "__tuple__": "a plain key that looks like a tag",
        "nested": [{"__dict__": 1}],
    }
    back = loads_exact(dumps_exact(value))
    assert same_value(value, back)
    assert math.copysign(1.0, back["neg0"]) == -1.0


def test_numpy_scalars_are_refused_rather_than_stored_approximately() -> None:
    with pytest.raises(UnencodableError):
        dumps_exact({"n": np.int64(3)})


def test_a_trace_holding_a_numpy_scalar_is_parsed_each_time_and_never_stored(
    tmp_path: Path, cache: TraceCache
) -> None:
    src = tmp_path / "t.json"
    src.write_text("{}")
    trace = make_trace(
        TraceMeta(rank=0, source_format="synthetic", source_path=str(src)),
        gpu={"name": ["k"], "kind": ["kernel"], "start_ns": [0], "end_ns": [5],
             "comm_args": [{"Group size": np.int64(2)}]},
    )  # fmt: skip
    read = Counting(lambda: [trace])
    _, o1 = cache.load("kineto", [src], read)
    _, o2 = cache.load("kineto", [src], read)
    assert (o1.status, o2.status, read.calls) == ("uncacheable", "uncacheable", 2)
    assert list(cache.traces.entries()) == []


def test_empty_tables_keep_their_categories() -> None:
    df = model.gpu_table()
    batch, specs = table_to_arrow(df)
    back = table_from_arrow(batch, specs)
    assert_same_table(df, back, "gpu")
    assert list(back["kind"].cat.categories) == list(model.GPU_KINDS)


def test_object_column_of_strings_stays_object_and_str_column_stays_str() -> None:
    obj = pd.Series(np.array(["a", None, "b"], dtype=object), dtype=object)
    df = pd.DataFrame({"o": obj, "s": pd.array(["a", None, "b"], dtype="str")})
    assert df["o"].dtype == np.dtype(object)
    batch, specs = table_to_arrow(df)
    assert_same_table(df, table_from_arrow(batch, specs), "mixed")


def test_an_object_column_of_strings_is_stored_as_a_dictionary_and_read_back_shared() -> None:
    words = ["[[2, 3]]", None, "[[4]]", "[[2, 3]]", None, "[[2, 3]]"]
    df = pd.DataFrame({"o": pd.Series(np.array(words, dtype=object), dtype=object)})
    batch, specs = table_to_arrow(df)
    assert pa.types.is_dictionary(batch.column(0).type)
    assert len(batch.column(0).dictionary) == 2
    back = table_from_arrow(batch, specs)
    assert_same_table(df, back, "dictionary")
    values = back["o"].to_numpy()
    assert values[1] is None and values[4] is None
    assert values[0] is values[3] is values[5]  # one Python string per distinct value


def test_an_object_column_of_plain_arrow_strings_is_still_read() -> None:
    words = ["a", None, "b"]
    plain = pa.Table.from_arrays([pa.array(words, type=pa.string())], names=["o"])
    back = table_from_arrow(plain, {"o": {"kind": "str"}})
    assert back["o"].dtype == np.dtype(object)
    assert back["o"].tolist() == words


# --------------------------------------------------------------------------------------------
# staleness and corruption: rebuilt, never trusted


def test_a_changed_model_version_is_a_different_entry(
    small_trace: Path, cache: TraceCache, monkeypatch: pytest.MonkeyPatch
) -> None:
    read = Counting(lambda: [read_kineto(small_trace)])
    cache.load("kineto", [small_trace], read)
    monkeypatch.setattr(model, "MODEL_VERSION", model.MODEL_VERSION + 1)
    _, outcome = cache.load("kineto", [small_trace], read)
    assert (outcome.status, read.calls) == ("built", 2)
    assert cache.traces.info().entries == 2
    assert cache.traces.info().stale_entries == 1  # the old version's entry


def test_an_entry_whose_manifest_claims_another_version_is_rebuilt(
    small_trace: Path, cache: TraceCache
) -> None:
    read = Counting(lambda: [read_kineto(small_trace)])
    _, o1 = cache.load("kineto", [small_trace], read)
    man_path = cache.traces.path(o1.key) / "manifest.json"  # type: ignore[arg-type]
    man = json.loads(man_path.read_text())
    man["versions"]["model_version"] = -1
    man_path.write_text(json.dumps(man))
    got, o2 = cache.load("kineto", [small_trace], read)
    assert (o2.status, read.calls) == ("rebuilt", 2)
    assert "version" in (o2.note or "")
    assert_same_trace(read_kineto(small_trace), got[0])
    _, o3 = cache.load("kineto", [small_trace], read)
    assert o3.status == "hit"


def test_a_rewritten_input_file_is_parsed_again(tmp_path: Path, cache: TraceCache) -> None:
    a = shared_path("kineto", "hta", "trace_compare", "base", "base.json.gz")
    b = shared_path("kineto", "hta", "trace_compare", "test", "test.json.gz")
    p = tmp_path / "rank-1.json.gz"
    shutil.copyfile(a, p)
    (first,), o1 = read_kineto_cached(p, cache)
    shutil.copyfile(b, p)  # same name, new content
    (second,), o2 = read_kineto_cached(p, cache)
    assert (o1.status, o2.status) == ("built", "built")
    assert_same_trace(read_kineto(p), second)
    assert len(first.gpu) != len(second.gpu)


def test_a_touched_but_identical_file_is_still_a_hit(small_trace: Path, cache: TraceCache) -> None:
    read_kineto_cached(small_trace, cache)
    st = small_trace.stat()
    os.utime(small_trace, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
    _, outcome = read_kineto_cached(small_trace, cache)
    assert outcome.status == "hit"  # rehashed, same content


@pytest.mark.parametrize("damage", ["truncate", "flip", "delete", "garbage_manifest"])
def test_a_damaged_entry_is_detected_and_rebuilt(
    small_trace: Path, cache: TraceCache, damage: str
) -> None:
    read = Counting(lambda: [read_kineto(small_trace)])
    _, o1 = cache.load("kineto", [small_trace], read)
    entry = cache.traces.path(o1.key)  # type: ignore[arg-type]
    man = json.loads((entry / "manifest.json").read_text())
    biggest = max(man["files"].values(), key=lambda f: f["bytes"])
    target = entry / biggest["file"]
    if damage == "truncate":
        target.write_bytes(target.read_bytes()[: biggest["bytes"] // 2])
    elif damage == "flip":
        data = bytearray(target.read_bytes())
        data[len(data) // 2] ^= 0x01
        target.write_bytes(bytes(data))
    elif damage == "delete":
        target.unlink()
    else:
        (entry / "manifest.json").write_text('{"key": ')
    got, o2 = cache.load("kineto", [small_trace], read)
    assert (o2.status, read.calls) == ("rebuilt", 2)
    assert_same_trace(read_kineto(small_trace), got[0])
    assert cache.load("kineto", [small_trace], read)[1].status == "hit"


def test_an_unreadable_input_raises_the_readers_error_and_stores_nothing(
    tmp_path: Path, cache: TraceCache
) -> None:
    bad = tmp_path / "rank-0.json.gz"
    bad.write_bytes(b"\x1f\x8b\x08\x00garbage")
    with pytest.raises(InputError) as err:
        read_kineto_cached(bad, cache)
    assert str(bad) in str(err.value)
    assert list(cache.traces.entries()) == []


# --------------------------------------------------------------------------------------------
# identity and location


def test_the_same_content_elsewhere_is_a_hit_with_its_own_path(
    small_trace: Path, tmp_path: Path, cache: TraceCache
) -> None:
    read_kineto_cached(small_trace, cache)
    other = tmp_path / "elsewhere" / small_trace.name
    other.parent.mkdir()
    shutil.copyfile(small_trace, other)
    (got,), outcome = read_kineto_cached(other, cache)
    assert outcome.status == "hit"
    assert got.meta.source_path == str(other)
    assert_same_trace(read_kineto(other), got)


def test_ranks_taken_from_file_names_are_not_shared_between_names(
    tmp_path: Path, cache: TraceCache
) -> None:
    src = shared_path("kineto", "hta", "distributed_info_unavailable")
    src = src / "distributed_info_not_found.json.gz"
    ranks = []
    for r in (5, 7):
        p = tmp_path / f"rank-{r}.json.gz"
        shutil.copyfile(src, p)
        (t,), _ = read_kineto_cached(p, cache)
        ranks.append((t.rank, t.meta.rank_source))
    assert ranks == [(5, "filename"), (7, "filename")]


def test_cache_dir_comes_from_the_environment_else_home(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "env"))
    assert cache_dir() == tmp_path / "env"
    assert cache_dir(tmp_path / "arg") == tmp_path / "arg"
    monkeypatch.delenv(CACHE_ENV)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert cache_dir() == tmp_path / "home" / ".cache" / "gpuscope"


def test_a_second_writer_of_the_same_key_keeps_the_first_entry(
    small_trace: Path, cache: TraceCache
) -> None:
    trace = read_kineto(small_trace)
    key = cache.key("kineto", [small_trace])
    assert cache.put(key, "kineto", [small_trace], [trace]) > 0
    assert cache.put(key, "kineto", [small_trace], [trace]) == 0
    assert_same_trace(trace, cache.get(key, [small_trace])[0])
    assert not list((cache.root / "tmp").iterdir())


def test_clear_removes_everything_and_stale_only_keeps_current_entries(
    small_trace: Path, cache: TraceCache, monkeypatch: pytest.MonkeyPatch
) -> None:
    read_kineto_cached(small_trace, cache)
    monkeypatch.setattr(model, "MODEL_VERSION", model.MODEL_VERSION + 1)
    read_kineto_cached(small_trace, cache)
    gone = cache.clear(stale_only=True)
    assert (gone.areas["traces"].entries, cache.traces.info().entries) == (1, 1)
    assert read_kineto_cached(small_trace, cache)[1].status == "hit"
    gone = cache.clear()
    assert gone.areas["traces"].entries == 1
    assert cache.info().entries == 0
    assert not (cache.root / "stat").exists()

"""collectors.graph_capture: TraceLens's ``capture_traces/execution_details.json`` layout."""

from __future__ import annotations

import msgspec
import pytest

from collectors.errors import InputError
from collectors.graph_capture import (
    DETAILS,
    describe_capture,
    find_capture_files,
    listed_captures,
    read_execution_details,
    records_stream_capture,
    without_captures,
)
from tests.support.raw_kineto import has_stream_capture
from tests.support.serving_data import CAPTURED, inference, tracelens_root


@pytest.mark.parametrize("key", sorted(CAPTURED))
def test_shared_execution_trace_finds_the_capture_its_details_list(key):
    ex_rel, cap_rel = CAPTURED[key]
    ex = inference(ex_rel)
    details = ex.parent / "capture_traces" / "execution_details.json"
    raw = msgspec.json.decode(details.read_bytes())
    files = find_capture_files(ex)
    assert [(f.path, f.batch_size, f.mode) for f in files] == [
        (details.parent / e["file"], e["batch_size"], e["mode"]) for e in raw
    ]
    assert files[0].path == inference(cap_rel)


def test_no_capture_folder_means_no_capture_files(tmp_path):
    assert find_capture_files(tmp_path / "trace.json.gz") == []


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("{", "not a list"),
        ('{"file": "a.json.gz"}', "not a list"),
        ('[{"file": "a.json.gz", "batch_size": "8", "mode": "FULL"}]', "not a list"),
        ('[{"file": "a.json.gz", "batch_size": 8, "mode": "HALF"}]', "mode 'HALF'"),
        ('[{"file": "gone.json.gz", "batch_size": 8, "mode": "FULL"}]', "does not exist"),
    ],
)
def test_bad_capture_list_is_an_input_error_naming_the_file(tmp_path, text, why):
    (tmp_path / "a.json.gz").write_bytes(b"")
    p = tmp_path / "execution_details.json"
    p.write_text(text)
    with pytest.raises(InputError) as e:
        read_execution_details(p)
    assert e.value.path == str(p) and why in e.value.message


@pytest.mark.parametrize("key", sorted(CAPTURED))
def test_the_layout_files_are_the_list_and_the_captures_it_names(key):
    ex_rel, cap_rel = CAPTURED[key]
    ex, cap = inference(ex_rel), inference(cap_rel)
    details = cap.parent / DETAILS
    files = [ex, cap, details]
    assert listed_captures(files) == {cap, details}
    assert without_captures(files) == [ex]
    assert without_captures([cap, details]) == [cap]  # a capture folder alone: its traces
    c = describe_capture(cap)
    assert (c.batch_size, c.mode) == (
        find_capture_files(ex)[0].batch_size,
        find_capture_files(ex)[0].mode,
    )


def test_a_capture_outside_the_layout_has_no_batch_size(tmp_path):
    f = tmp_path / "c.json"
    f.write_text("{}")
    assert describe_capture(f).batch_size is None and describe_capture(f).mode is None
    with pytest.raises(InputError):
        describe_capture(tmp_path / "gone.json")


def test_the_byte_screen_agrees_with_the_raw_events_on_every_shared_trace():
    paths = sorted(tracelens_root().rglob("*.json.gz"))
    assert len(paths) >= 15
    for p in paths:
        assert records_stream_capture(p) == has_stream_capture(p), p


def test_the_byte_screen_finds_a_mark_split_across_chunks(tmp_path, monkeypatch):
    import collectors.graph_capture as gc

    monkeypatch.setattr(gc, "_CHUNK", 8)
    f = tmp_path / "t.json"
    f.write_text('{"name": "hipStreamBeginCapture"}')
    assert gc.records_stream_capture(f)
    f.write_text('{"name": "hipStreamEndCapture"}')
    assert not gc.records_stream_capture(f)
    assert not gc.records_stream_capture(tmp_path / "missing.json")

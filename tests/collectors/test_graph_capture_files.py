"""collectors.graph_capture: TraceLens's ``capture_traces/execution_details.json`` layout."""

from __future__ import annotations

import msgspec
import pytest

from collectors.errors import InputError
from collectors.graph_capture import find_capture_files, read_execution_details
from tests.support.serving_data import CAPTURED, inference


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

"""nccl-tests ``*_perf`` logs (every layout since 2017, and ``-J`` JSON): read and rechecked.

Stages: :mod:`~collectors.nccl_tests.sections` (text → sections → raw result tokens),
:mod:`~collectors.nccl_tests.recheck` (algbw / busbw against size, time and the bus factor),
:mod:`~collectors.nccl_tests.reader` (the entry points, one :class:`NcclTestsLog` per section).
"""

from __future__ import annotations

from collectors.nccl_tests.log import PLACEMENTS, ROW_COLUMNS, NcclTestsLog
from collectors.nccl_tests.reader import parse_nccl_tests_text, peak_table, read_nccl_tests

__all__ = [
    "PLACEMENTS",
    "ROW_COLUMNS",
    "NcclTestsLog",
    "parse_nccl_tests_text",
    "peak_table",
    "read_nccl_tests",
]

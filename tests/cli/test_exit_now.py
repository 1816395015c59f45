"""The console script ends without interpreter teardown (cli.exit_codes.exit_now) but as a normal
exit otherwise would: exit handlers run, buffered output is written, the code is kept."""

from __future__ import annotations

import subprocess
import sys

from tests.support.env import REPO

PROGRAM = """
import atexit, sys, threading
from cli.exit_codes import exit_now
atexit.register(lambda: print("handler ran"))
sys.stdout.write("buffered, no newline")
if sys.argv[1] == "thread":
    threading.Thread(target=lambda: __import__("time").sleep(0.2)).start()
exit_now(int(sys.argv[2]))
"""


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", PROGRAM, *args], capture_output=True, text=True, cwd=REPO
    )


def test_handlers_run_output_is_flushed_and_the_code_kept() -> None:
    p = _run("plain", "3")
    assert p.returncode == 3
    assert p.stdout == "buffered, no newlinehandler ran\n"


def test_with_another_thread_running_it_is_a_normal_exit() -> None:
    p = _run("thread", "4")
    assert p.returncode == 4
    assert p.stdout == "buffered, no newlinehandler ran\n"


def test_the_console_script_exits_with_the_commands_code(tmp_path) -> None:
    p = subprocess.run(
        [sys.executable, "-m", "cli.main", "analyze", str(tmp_path / "missing.json")],
        capture_output=True,
        text=True,
        cwd=REPO,
    )
    assert p.returncode == 2 and "missing.json" in p.stderr

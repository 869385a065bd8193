"""make e2e's two runs at once: the scenarios and the engine phase, each a child of its own (--with-engine)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

import e2e.__main__ as e2e_main
from e2e.run import parse_args

# A stand-in for `unshare ... python -m e2e.run --bin-dir ...`: says how it was called, exits as told.
CHILD = [
    sys.executable,
    "-c",
    "import os, sys; print('engine' if '--engine' in sys.argv else 'scenarios', sys.argv[1:]); "
    "sys.exit(int(os.environ['ENGINE_EXIT' if '--engine' in sys.argv else 'SCENARIOS_EXIT']))",
]


@pytest.fixture(autouse=True)
def ctrl_c_raises():
    """Ctrl-C as in a terminal, whatever this process inherited (a background job starts with SIGINT ignored)."""
    inherited = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, inherited)


@pytest.mark.parametrize(
    ("scenarios", "engine", "expected"),
    [("0", "0", 0), ("1", "0", 1), ("0", "1", 1), ("1", "2", 2), ("130", "0", 130)],
)
def test_both_run_and_the_worse_exit_wins(monkeypatch, tmp_path: Path, capfd, scenarios, engine, expected) -> None:
    monkeypatch.setattr(e2e_main, "ENGINE_LOG", tmp_path / "e2e" / "engine.log")
    monkeypatch.setenv("SCENARIOS_EXIT", scenarios)
    monkeypatch.setenv("ENGINE_EXIT", engine)
    assert e2e_main._scenarios_and_engine(CHILD, ["--scenario", "quota"]) == expected
    shown = capfd.readouterr().out
    assert "scenarios ['--scenario', 'quota']" in shown
    assert shown.rstrip().endswith("engine ['--engine']"), "the engine's output comes after the scenarios'"
    assert (tmp_path / "e2e" / "engine.log").read_text() == "engine ['--engine']\n"
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler, "Ctrl-C is this process's again"


@pytest.mark.parametrize("other", [["--engine"], ["--chaos"], ["--simulate", "x.yaml"], ["--try", "p", "--team", "t"]])
def test_with_engine_goes_only_with_the_scenarios(other: list[str]) -> None:
    assert parse_args(["--with-engine", "--scenario", "quota"]).with_engine
    with pytest.raises(SystemExit):
        parse_args(["--with-engine", *other])


def test_a_ctrl_c_waits_for_the_child_to_stop_its_rig(tmp_path: Path) -> None:
    """The Ctrl-C reaches this process and the child at once; this one waits, the child cleans up and exits 130."""
    ready, stopped = tmp_path / "ready", tmp_path / "stopped"
    script = (
        "import pathlib, signal, sys, time\n"
        "signal.signal(signal.SIGINT, signal.default_int_handler)\n"
        f"try:\n    pathlib.Path({str(ready)!r}).touch()\n    time.sleep(60)\n"
        f"except KeyboardInterrupt:\n    time.sleep(1)\n    pathlib.Path({str(stopped)!r}).write_text('rig stopped')\n"
        "    sys.exit(130)\n"
    )
    child = subprocess.Popen([sys.executable, "-c", script])
    while not ready.exists() and child.poll() is None:
        time.sleep(0.05)

    def ctrl_c() -> None:
        os.kill(os.getpid(), signal.SIGINT)
        child.send_signal(signal.SIGINT)

    threading.Timer(0.2, ctrl_c).start()
    assert e2e_main._waited(child) == (130,)
    assert stopped.read_text() == "rig stopped", "the child finished its clean-up"
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler

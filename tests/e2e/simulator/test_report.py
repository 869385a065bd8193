"""The report of a simulated day (`make simulate` with a trace), over synthetic run documents, without the rig."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

import matplotlib
import matplotlib.image
import pytest

from e2e import __main__ as entry
from e2e.simulator.report import comparison_table, markdown, plot, summary, terminal
from e2e.simulator.trace import load_trace
from tests.conftest import ROOT

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
# Every run's section of the Markdown report, in order.
RUN_HEADINGS = [
    "### Nodes by instance type",
    "### Cost by pool",
    "### Waits by team",
    "### Waits by priority",
    "### Disruptions",
    "### NodeClaims",
    "### Pods that never ran",
    "### What the rig compressed",
]


def _sample() -> dict[str, Any]:
    """The shape of one run document as the rig writes it (every key always present)."""
    wait = {"pods": 40, "p50_s": 12.0, "p95_s": 61.0, "max_s": 70.0, "beyond_launch_max_s": 58.0}
    return {
        "kind": "trace",
        "trace": "examples/workloads/inference-day.yaml",
        "stack": "dev",
        "variant": "stack",
        "run": 1,
        "seconds_per_hour": 20,
        "hours": 24,
        "wall_seconds": 498.2,
        "wall_seconds_per_simulated_hour": 20.8,
        "compression": [
            "consolidateAfter g4dn-shared 15m -> 5s",
            "budget g4dn-shared nodes 0 from 15:00 for 9h -> cron '41 11 * * *' for 3m",
        ],
        "cost": {
            "usd": 14.52,
            "oracle_usd": 12.01,
            "ratio": 1.209,
            "node_hours_by_type": {"g4dn.xlarge": 20.5, "g5.xlarge": 6.1},
            "usd_by_type": {"g4dn.xlarge": 10.78, "g5.xlarge": 6.13},
            "by_pool": {"g4dn-shared": {"usd": 14.52, "oracle_usd": 12.01, "ratio": 1.209}},
        },
        "timeline": [
            {
                "hour": 0.0,
                "usd_per_hour": 0.526,
                "oracle_usd_per_hour": 0.526,
                "gpu_memory_used_mib": 3072,
                "gpu_memory_paid_mib": 15360,
                "gpu_cores_used": 20,
                "gpu_cores_paid": 100,
                "pods_running": 2,
                "pods_pending": 0,
                "nodes": 1,
            },
            {
                "hour": 0.1,
                "usd_per_hour": 1.5,
                "oracle_usd_per_hour": 1.1,
                "gpu_memory_used_mib": 40000,
                "gpu_memory_paid_mib": 70000,
                "gpu_cores_used": 300,
                "gpu_cores_paid": 500,
                "pods_running": 10,
                "pods_pending": 3,
                "nodes": 4,
            },
        ],
        "waits": {"by_team": {"inference": dict(wait)}, "by_priority": {"gpushare-critical": dict(wait)}},
        "disruptions": {
            "by_cause": {"Underutilized": 3, "Empty": 0, "Preempted": 0},
            "in_budget_window": {"inference": 0},
        },
        "nodeclaims": {"launched": 12, "consolidated": 10, "by_reason": {"Empty": 4, "Underutilized": 6}},
        "never_ran": [{"refused_by": "admission", "message": 'pods "x" is forbidden: exceeded quota ...', "pods": 3}],
    }


def _run(variant: str = "stack", run: int = 1, **changes: Any) -> dict[str, Any]:
    """The sample run with its variant and number, and top-level keys or `section__key` values replaced."""
    document = copy.deepcopy(_sample())
    document.update(variant=variant, run=run)
    for key, value in changes.items():
        section, _, inner = key.partition("__")
        if inner:
            document[section][inner] = value
        else:
            document[section] = value
    return document


def _empty(variant: str = "stack", run: int = 1) -> dict[str, Any]:
    """A run where nothing happened: every dict and list of the document empty."""
    return _run(
        variant,
        run,
        compression=[],
        timeline=[],
        cost__node_hours_by_type={},
        cost__usd_by_type={},
        cost__by_pool={},
        waits__by_team={},
        waits__by_priority={},
        disruptions__by_cause={},
        disruptions__in_budget_window={},
        nodeclaims__by_reason={},
        never_ran=[],
    )


def _waits(**p95_by_team: float) -> dict[str, dict[str, Any]]:
    """Five pods per team, each team's max wait 10 s above its p95, half its p95 after its node's launch."""
    return {
        team: {"pods": 5, "p50_s": 1.0, "p95_s": p95, "max_s": p95 + 10, "beyond_launch_max_s": p95 / 2}
        for team, p95 in p95_by_team.items()
    }


def _document(runs: list[dict[str, Any]]) -> dict[str, Any]:
    return {"kind": "trace", "trace": runs[0]["trace"], "stack": "dev", "runs": runs, "summary": summary(runs)}


THREE_RUNS = [
    _run(
        "with-buffer",
        1,
        cost__usd=9.0,
        cost__ratio=0.75,
        waits__by_team=_waits(a=5.0),
        disruptions__by_cause={"Empty": 1},
    ),
    _run(
        "stack",
        1,
        cost__usd=16.0,
        cost__ratio=1.6,
        waits__by_team=_waits(inference=61.0, batch=300.0),
        disruptions__by_cause={"Underutilized": 3, "Empty": 2},
        nodeclaims__launched=9,
        wall_seconds_per_simulated_hour=21.0,
    ),
    _run(
        "stack",
        2,
        cost__usd=10.0,
        cost__ratio=1.0,
        waits__by_team=_waits(inference=20.0),
        disruptions__by_cause={"Underutilized": 1},
        nodeclaims__launched=14,
        wall_seconds_per_simulated_hour=20.0,
    ),
    _run(
        "stack",
        3,
        cost__usd=12.0,
        cost__ratio=1.2,
        waits__by_team={},
        disruptions__by_cause={},
        nodeclaims__launched=12,
        wall_seconds_per_simulated_hour=23.0,
    ),
]


def test_summary_gives_each_variant_in_first_seen_order_its_min_median_max():
    result = summary(THREE_RUNS)
    assert list(result) == ["with-buffer", "stack"]
    stack = result["stack"]
    assert stack["runs"] == 3
    assert stack["cost_usd"] == {"min": 10.0, "median": 12.0, "max": 16.0}
    assert stack["ratio"] == {"min": 1.0, "median": 1.2, "max": 1.6}
    assert stack["pods_disrupted"] == {"min": 0, "median": 1, "max": 5}
    assert stack["nodeclaims_launched"] == {"min": 9, "median": 12, "max": 14}
    assert stack["wall_seconds_per_simulated_hour"] == {"min": 20.0, "median": 21.0, "max": 23.0}
    assert stack["spread_percent"] == 50.0  # (16 - 10) / 12


def test_summary_waits_are_the_worst_teams_over_the_runs_that_had_pods():
    """Run 1's worst team waited 300 s at p95 (batch), run 2's 20 s; run 3 had no pods and counts for none."""
    stack = summary(THREE_RUNS)["stack"]
    assert stack["p95_wait_s"] == {"min": 20.0, "median": 160.0, "max": 300.0}
    assert stack["max_wait_s"] == {"min": 30.0, "median": 170.0, "max": 310.0}


def test_summary_of_one_run_has_no_spread_and_no_waits_without_pods():
    idle_team = {"t": {"pods": 0, "p50_s": 0.0, "p95_s": 0.0, "max_s": 0.0, "beyond_launch_max_s": 0.0}}
    result = summary([_run("idle", waits__by_team=idle_team)])["idle"]
    assert result["runs"] == 1
    assert result["spread_percent"] == 0
    assert result["p95_wait_s"] == result["max_wait_s"] == {"min": None, "median": None, "max": None}


def _rows(table: str) -> dict[str, list[str]]:
    """The table's rows by their first cell, each as its cells."""
    lines = table.strip().splitlines()
    assert re.fullmatch(r"\|(---\|)+", lines[1])
    cells = [[cell.strip() for cell in line.strip("|").split(" | ")] for line in lines[2:]]
    return {row[0]: row for row in cells}


def test_comparison_table_has_a_row_per_variant_with_medians_and_the_cost_range_of_repeated_runs():
    table = comparison_table(summary(THREE_RUNS))
    header = table.splitlines()[0]
    assert header == (
        "| variant | runs | day cost $ | ratio to oracle | p95 wait s | max wait s | max wait after node launch s | "
        "pods disrupted | of them in budget windows | NodeClaims launched | cost spread % | s per simulated hour |"
    )
    rows = _rows(table)
    assert list(rows) == ["with-buffer", "stack"]
    assert rows["stack"] == [
        *("stack", "3", "12.00 (10.00-16.00)", "1.200", "160.0", "170.0", "80.0", "1", "0", "12", "50.0", "21.0")
    ]
    assert rows["with-buffer"] == [
        *("with-buffer", "1", "9.00", "0.750", "5.0", "15.0", "2.5", "1", "0", "12", "0.0", "20.8")
    ]


def test_comparison_table_says_n_a_for_waits_of_a_variant_without_pods():
    rows = _rows(comparison_table(summary([_empty("idle")])))
    assert rows["idle"][4:6] == ["n/a", "n/a"]


def _sections(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("#")]


def test_markdown_has_every_section_for_a_populated_and_an_empty_run():
    text = markdown(_document([_run(), _empty("idle", 2)]))
    assert _sections(text) == [
        "# A simulated day: examples/workloads/inference-day.yaml on stack dev",
        "## stack, run 1",
        *RUN_HEADINGS,
        "## idle, run 2",
        *RUN_HEADINGS,
    ]
    assert "![stack, run 1](simulate-stack-run1.png)" in text
    assert "![idle, run 2](simulate-idle-run2.png)" in text
    assert text.count("| variant | runs |") == 1


def test_markdown_shows_a_populated_runs_figures():
    text = markdown(_document([_run()]))
    assert "Cost: $14.52 for the day against the oracle's $12.01, ratio 1.209." in text
    assert "| g4dn.xlarge | 20.5 | 10.78 |" in text
    assert "| inference | 40 | 12.0 | 61.0 | 70.0 | 58.0 |" in text
    assert "| gpushare-critical | 40 | 12.0 | 61.0 | 70.0 | 58.0 |" in text
    assert "3 pods disrupted." in text
    assert "| Underutilized | 3 |" in text
    assert "| inference | 0 |" in text
    assert "| g4dn-shared | 14.52 | 12.01 | 1.209 |" in text
    assert "12 launched, 10 consolidated." in text
    assert '| admission | 3 | pods "x" is forbidden: exceeded quota ... |' in text
    assert "- budget g4dn-shared nodes 0 from 15:00 for 9h -> cron '41 11 * * *' for 3m" in text
    assert "24 simulated hours at 20 s each took 498.2 s (20.8 s per simulated hour)." in text


def test_markdown_says_what_an_empty_run_lacks():
    text = markdown(_document([_empty()]))
    for phrase in ("No nodes were launched.", "No pods.", "0 pods disrupted.", "Every pod ran.", "Nothing else"):
        assert phrase in text


def test_a_message_with_a_pipe_or_line_break_stays_in_its_table_cell():
    refused = {"refused_by": "quota", "message": "a | b\nc", "pods": 2}
    text = markdown(_document([_run(never_ran=[refused])]))
    assert "| quota | 2 | a \\| b c |" in text


def test_terminal_has_the_comparison_and_a_line_per_run_naming_its_plot():
    text = terminal(_document([_run(), _empty("idle", 2)]))
    assert "| variant | runs |" in text
    assert (
        "stack run 1: $14.52 for the day against the oracle's $12.01, ratio 1.209, max wait 70.0 s, "
        "3 pods disrupted, 3 never ran; build/e2e/simulate-stack-run1.png"
    ) in text
    assert "idle run 2:" in text
    assert "max wait n/a, 0 pods disrupted, 0 never ran; build/e2e/simulate-idle-run2.png" in text


@pytest.mark.parametrize("timeline", ["two samples", "empty"])
def test_plot_writes_a_1000_by_800_png_that_reads_back(tmp_path: Path, timeline: str):
    run = _run() if timeline == "two samples" else _empty()
    path = tmp_path / "day.png"
    plot(run, path)
    data = path.read_bytes()
    assert data.startswith(PNG_SIGNATURE)
    assert matplotlib.image.imread(path).shape[:2] == (800, 1000)


def test_plot_is_the_same_bytes_twice_and_names_no_matplotlib_version(tmp_path: Path):
    first, second = tmp_path / "a.png", tmp_path / "b.png"
    plot(_run(), first)
    plot(_run(), second)
    assert first.read_bytes() == second.read_bytes()
    assert matplotlib.__version__.encode() not in first.read_bytes()


def test_gather_orders_the_runs_as_the_trace_lists_its_variants_and_writes_the_reports(tmp_path: Path, monkeypatch):
    trace = load_trace(ROOT / "examples" / "workloads" / "inference-day.yaml")
    runs_dir = tmp_path / "simulate-runs"
    runs_dir.mkdir()
    for variant, run in (("four-gpu-batch", 1), ("stack", 2), ("when-empty", 1), ("stack", 1)):
        (runs_dir / f"simulate-{variant}-run{run}.json").write_text(json.dumps(_run(variant, run)))
    monkeypatch.setattr(entry, "REPORT_DIR", tmp_path)
    monkeypatch.setattr(entry, "RUNS_DIR", runs_dir)
    entry._gather(Path("examples/workloads/inference-day.yaml"), trace)
    document = json.loads((tmp_path / "simulate.json").read_text())
    assert [(run["variant"], run["run"]) for run in document["runs"]] == [
        ("stack", 1),
        ("stack", 2),
        ("when-empty", 1),
        ("four-gpu-batch", 1),
    ]
    assert document["summary"]["stack"]["runs"] == 2
    assert "## four-gpu-batch, run 1" in (tmp_path / "simulate.md").read_text()

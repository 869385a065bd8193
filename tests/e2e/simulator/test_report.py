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
from e2e.simulator.report import comparison_table, markdown, plot, run_stem, speed_table, summary, terminal
from e2e.simulator.trace import load_trace
from tests.conftest import ROOT

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
# Every run's section of the Markdown report, in order.
RUN_HEADINGS = [
    "### Nodes by instance type",
    "### Cost by pool",
    "### Pods",
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
    pods = {"asked": 40, "served": 37, "refused": 2, "never_placed": 1}
    by_design = {"quota_refused_by_design": 0, "quota_delayed_by_design": 0}
    return {
        "kind": "trace",
        "trace": "examples/workloads/inference-day.yaml",
        "mapping": None,
        "stack": "dev",
        "variant": "stack",
        "run": 1,
        "conditions": {"commit": "abc1234", "seconds_per_hour": 20},
        "seconds_per_hour": 20,
        "hours": 24,
        "horizon_hours": 24,
        "billed_end_hours": 24,
        "wall_seconds": 498.2,
        "wall_seconds_per_simulated_hour": 20.8,
        "compression": [
            "consolidateAfter g4dn-shared 15m -> 5s",
            "budget g4dn-shared nodes 0 '0 15 * * mon-fri' for 9h: switched by the rig at simulated 15:00-24:00",
        ],
        "disruption_settings": {"g4dn-shared": {"consolidate_after_minutes": 15.0, "rig_consolidate_after_s": 5.0}},
        "cost": {
            "usd": 14.52,
            "corrected_usd": 12.6,
            "compression_usd": 1.92,
            "oracle_usd": 12.01,
            "policy_usd": 12.3,
            "ratio": 1.209,
            "corrected_ratio": 1.049,
            "corrected_to_policy": 1.024,
            "policy_ratio": 1.024,
            "within_day": {
                "usd": 14.52,
                "corrected_usd": 12.6,
                "oracle_usd": 12.01,
                "policy_usd": 12.3,
                "corrected_ratio": 1.049,
            },
            "tail": {
                "hours": 0.0,
                "usd": 0.0,
                "corrected_usd": 0.0,
                "oracle_usd": 0.0,
                "policy_usd": 0.0,
                "corrected_ratio": None,
            },
            "node_hours_by_type": {"g4dn.xlarge": 20.5, "g5.xlarge": 6.1},
            "usd_by_type": {"g4dn.xlarge": 10.78, "g5.xlarge": 6.13},
            "by_pool": {
                "g4dn-shared": {
                    "usd": 14.52,
                    "corrected_usd": 12.6,
                    "oracle_usd": 12.01,
                    "policy_usd": 12.3,
                    "ratio": 1.209,
                    "corrected_ratio": 1.049,
                }
            },
        },
        "latency": {
            "nodes": 6,
            "launch_wait_s": 80.0,
            "launch_wait_max_s": 22.0,
            "teardown_wait_s": 40.0,
            "teardown_wait_max_s": 12.0,
            "boot_s": 120.0,
        },
        "timeline": [
            {
                "hour": 0.0,
                "usd_per_hour": 0.526,
                "corrected_usd_per_hour": 0.526,
                "oracle_usd_per_hour": 0.526,
                "policy_usd_per_hour": 0.526,
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
                "corrected_usd_per_hour": 1.2,
                "oracle_usd_per_hour": 1.1,
                "policy_usd_per_hour": 1.1,
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
        "pods": {"by_group": {"chat": {**pods, **by_design}}, "total": {**pods, **by_design}},
        "never_ran": [
            {"refused_by": "admission", "message": 'pods "x" is forbidden: exceeded quota ...', "workloads": 3}
        ],
        "too_fast": None,
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
        pods={"by_group": {}, "total": dict.fromkeys(("asked", "served", "refused", "never_placed"), 0)},
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


def _costs(corrected: float, raw: float | None = None) -> dict[str, Any]:
    """A run's cost section with its corrected and raw dollars (the rest as the sample has it)."""
    cost = copy.deepcopy(_sample()["cost"])
    cost.update(corrected_usd=corrected, usd=raw if raw is not None else corrected + 2)
    cost.update(compression_usd=round(cost["usd"] - corrected, 3), corrected_ratio=round(corrected / 12.0, 3))
    return cost


THREE_RUNS = [
    _run("with-buffer", 1, cost=_costs(9.0), waits__by_team=_waits(a=5.0), disruptions__by_cause={"Empty": 1}),
    _run(
        "stack",
        1,
        cost=_costs(16.0),
        waits__by_team=_waits(inference=61.0, batch=300.0),
        disruptions__by_cause={"Underutilized": 3, "Empty": 2},
        nodeclaims__launched=9,
        wall_seconds_per_simulated_hour=21.0,
    ),
    _run(
        "stack",
        2,
        cost=_costs(10.0),
        waits__by_team=_waits(inference=20.0),
        disruptions__by_cause={"Underutilized": 1},
        nodeclaims__launched=14,
        wall_seconds_per_simulated_hour=20.0,
    ),
    _run(
        "stack",
        3,
        cost=_costs(12.0),
        waits__by_team={},
        disruptions__by_cause={},
        nodeclaims__launched=12,
        wall_seconds_per_simulated_hour=23.0,
    ),
]


def test_summary_gives_each_variant_in_first_seen_order_its_min_median_max():
    result = summary(THREE_RUNS)
    assert result["seconds_per_hour"] == 20
    assert list(result["variants"]) == ["with-buffer", "stack"]
    stack = result["variants"]["stack"]
    assert stack["runs"] == 3
    assert stack["corrected_usd"] == {"min": 10.0, "median": 12.0, "max": 16.0}
    assert stack["cost_usd"] == {"min": 12.0, "median": 14.0, "max": 18.0}
    assert stack["pods_disrupted"] == {"min": 0, "median": 1, "max": 5}
    assert stack["nodeclaims_launched"] == {"min": 9, "median": 12, "max": 14}
    assert stack["wall_seconds_per_simulated_hour"] == {"min": 20.0, "median": 21.0, "max": 23.0}
    assert stack["spread_percent"] == 50.0  # (16 - 10) / 12, on the corrected cost
    assert result["speed_check"] == {}


def test_summary_waits_are_the_worst_teams_over_the_runs_that_had_pods():
    """Run 1's worst team waited 300 s at p95 (batch), run 2's 20 s; run 3 had no pods and counts for none."""
    stack = summary(THREE_RUNS)["variants"]["stack"]
    assert stack["p95_wait_s"] == {"min": 20.0, "median": 160.0, "max": 300.0}
    assert stack["max_wait_s"] == {"min": 30.0, "median": 170.0, "max": 310.0}


def test_summary_of_one_run_has_no_spread_and_no_waits_without_pods():
    idle_team = {"t": {"pods": 0, "p50_s": 0.0, "p95_s": 0.0, "max_s": 0.0, "beyond_launch_max_s": 0.0}}
    result = summary([_run("idle", waits__by_team=idle_team)])["variants"]["idle"]
    assert result["runs"] == 1
    assert result["spread_percent"] == 0
    assert result["p95_wait_s"] == result["max_wait_s"] == {"min": None, "median": None, "max": None}


def test_a_variant_within_the_runs_spread_is_unresolved_beyond_it_ranked():
    """The stack's three runs spread $6 (10-16): a variant $3 cheaper cannot be told from it, $4 cheaper can."""
    near = summary([*THREE_RUNS[1:], _run("near", 1, cost=_costs(9.0)), _run("near", 2, cost=_costs(9.5))])
    assert near["variants"]["near"]["verdict"] == "unresolved: -2.75 $ is within the runs' spread (6.00 $)"
    far = [_run("far", 1, cost=_costs(5.0)), _run("far", 2, cost=_costs(5.5))]
    assert summary([*THREE_RUNS[1:], *far])["variants"]["far"]["verdict"] == "cheaper by 6.75 $ (spread 6.00 $)"


def test_one_run_each_is_unresolved_for_want_of_a_spread():
    result = summary([THREE_RUNS[1], _run("v", 1, cost=_costs(2.0))])
    assert (
        result["variants"]["v"]["verdict"] == "unresolved: -14.00 $ from one run each, the spread is unknown (RUNS=3)"
    )
    assert "verdict" not in result["variants"]["stack"]


def test_a_consolidate_after_compressed_below_karpenters_floor_is_unresolved():
    """1m against 10m at 20 s per simulated hour: both run as a few seconds, below the 25 s Karpenter needs."""
    faster = {"g4dn-shared": {"consolidate_after_minutes": 1.0, "rig_consolidate_after_s": 1.0}}
    runs = [*THREE_RUNS[1:], *(_run("one-minute", k, cost=_costs(1.0), disruption_settings=faster) for k in (1, 2))]
    verdict = summary(runs)["variants"]["one-minute"]["verdict"]
    assert verdict.startswith("unresolved: g4dn-shared consolidateAfter ran as 5 s and 1 s, below Karpenter's 25 s")
    slow = {"g4dn-shared": {"consolidate_after_minutes": 1.0, "rig_consolidate_after_s": 30.0}}
    base = [
        _run(
            "stack",
            k,
            cost=_costs(12.0),
            disruption_settings={"g4dn-shared": {"consolidate_after_minutes": 15.0, "rig_consolidate_after_s": 300.0}},
        )
        for k in (1, 2)
    ]
    resolved = summary([*base, *(_run("one-minute", k, cost=_costs(1.0), disruption_settings=slow) for k in (1, 2))])
    assert resolved["variants"]["one-minute"]["verdict"].startswith("cheaper by 11.00 $")


def test_the_speed_check_fits_cost_as_c_plus_a_over_seconds_per_hour():
    """Raw costs 30 at 20 s/h and 20 at 60 s/h lie on 15 + 300 / s: C = 15 is the full-scale estimate."""
    runs = [
        _run("stack", 1, seconds_per_hour=20, cost=_costs(16.0, raw=30.0), nodeclaims__launched=12),
        _run("stack", 1, seconds_per_hour=60, cost=_costs(15.5, raw=20.0), nodeclaims__launched=9),
    ]
    result = summary(runs)
    check = result["speed_check"]["stack"]
    assert (check["full_scale_usd"], check["per_inverse_speed_usd"]) == (15.0, 300.0)
    assert check["agreement_percent"] == 5.0  # the corrected median 15.75 against C = 15
    assert check["per_speed"]["20"]["nodeclaims_launched"] == 12
    assert check["per_speed"]["60"]["nodeclaims_launched"] == 9
    assert result["seconds_per_hour"] == 60  # one run each: the slowest
    table = _rows(speed_table(result))
    assert table["stack"][1] == "60"


def _served(count: int) -> dict[str, Any]:
    return {"by_group": {}, "total": {"asked": 23, "served": count, "refused": 0, "never_placed": 23 - count}}


def test_a_speed_that_served_fewer_pods_is_left_out_of_the_fit():
    """At 20 s/h four pods never ran: that run paid for a smaller day, so C comes from 60 and 120 s/h alone
    (raw 20 and 17.5 lie on 15 + 300 / s), and the table says which speed is out."""
    runs = [
        _run("stack", 1, seconds_per_hour=20, cost=_costs(9.0, raw=25.0), pods=_served(19)),
        _run("stack", 1, seconds_per_hour=60, cost=_costs(15.5, raw=20.0), pods=_served(23)),
        _run("stack", 1, seconds_per_hour=120, cost=_costs(15.2, raw=17.5), pods=_served(23)),
    ]
    check = summary(runs)["speed_check"]["stack"]
    assert (check["full_scale_usd"], check["per_inverse_speed_usd"]) == (15.0, 300.0)
    assert check["corrected_usd"] == 15.35  # the fitted runs' median
    assert [check["per_speed"][s]["runs_fitted"] for s in ("20", "60", "120")] == [0, 1, 1]
    rows = [row.split(" | ") for row in speed_table(summary(runs)).splitlines()[2:]]
    assert [(row[1], row[7], row[8]) for row in rows] == [
        ("20", "19", "0 of 1"),
        ("60", "23", "yes"),
        ("120", "23", "yes"),
    ]


def test_no_fit_when_fewer_than_two_speeds_served_the_whole_day():
    runs = [
        _run("stack", 1, seconds_per_hour=20, cost=_costs(9.0, raw=25.0), pods=_served(19)),
        _run("stack", 1, seconds_per_hour=60, cost=_costs(15.5, raw=20.0), pods=_served(23)),
    ]
    check = summary(runs)["speed_check"]["stack"]
    assert check["full_scale_usd"] is None and check["agreement_percent"] is None
    assert "n/a" in speed_table(summary(runs))


def test_a_run_too_fast_for_its_day_says_why_and_the_speed_that_is_not():
    fast = {
        "shortest_life": {"group": "chat", "minute": 180, "life_minutes": 90, "life_real_s": 30.0, "floor_s": 45.0},
        "busiest_hour": {"minute": 30, "pods": 13, "pods_per_s": 0.65, "rate_per_s": 0.4},
        "seconds_per_hour_needed": 33,
    }
    expected = (
        "Too fast for this day: chat's pods added at 03:00 live 90 simulated minutes, 30 real s at 20 s per "
        "simulated hour, under the 45 s the rig can take from a node's launch to its pods running: pods that never "
        "ran may be the compression's, not the stack's; the hour from 00:30 adds 13 pods, 0.65 a real second at 20 s "
        "per simulated hour, more than the 0.4 the rig places: they queue, and their waits are the rig's "
        "(secondsPerHour 33 or more clears this)."
    )
    assert expected in markdown(_document([_run(too_fast=fast)]))
    assert expected in terminal(_document([_run(too_fast=fast)]))
    only_hour = {"busiest_hour": fast["busiest_hour"], "seconds_per_hour_needed": 33}
    assert "Too fast for this day: the hour from 00:30" in markdown(_document([_run(too_fast=only_hour)]))
    assert "Too fast" not in markdown(_document([_run()]))


def _rows(table: str) -> dict[str, list[str]]:
    """The table's rows by their first cell (the last row of a repeated first cell), each as its cells."""
    lines = table.strip().splitlines()
    assert re.fullmatch(r"\|(---\|)+", lines[1])
    cells = [[cell.strip() for cell in line.strip("|").split(" | ")] for line in lines[2:]]
    return {row[0]: row for row in cells}


def test_comparison_table_has_a_row_per_variant_with_medians_and_the_cost_range_of_repeated_runs():
    table = comparison_table(summary(THREE_RUNS))
    header = table.splitlines()[0]
    assert header == (
        "| variant | runs | corrected $ | raw $ | compression $ | oracle $ | policy bound $ | corrected / oracle | "
        "corrected / bound | pods served / refused / never placed | p95 wait s | max wait after node launch s | "
        "pods disrupted (in budget windows) | NodeClaims | spread % | against the stack |"
    )
    rows = _rows(table)
    assert list(rows) == ["with-buffer", "stack"]
    assert rows["stack"][:4] == ["stack", "3", "12.00 (10.00-16.00)", "14.00"]
    assert rows["stack"][9:] == ["37 / 2 / 1", "160.0", "80.0", "1 (0)", "12", "50.0", "the stack"]
    assert rows["with-buffer"][-1] == "unresolved: -3.00 $ is within the runs' spread (6.00 $)"


def test_comparison_table_says_n_a_for_waits_of_a_variant_without_pods():
    rows = _rows(comparison_table(summary([_empty("idle")])))
    assert rows["idle"][10:12] == ["n/a", "n/a"]


def _sections(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("#")]


def test_markdown_has_every_section_for_a_populated_and_an_empty_run():
    text = markdown(_document([_run(), _empty("idle", 2)]))
    assert _sections(text) == [
        "# A simulated day: examples/workloads/inference-day.yaml on stack dev",
        "## stack, 20 s per simulated hour, run 1",
        *RUN_HEADINGS,
        "## idle, 20 s per simulated hour, run 2",
        *RUN_HEADINGS,
    ]
    assert "![stack, run 1](simulate-stack-20s-run1.png)" in text
    assert "![idle, run 2](simulate-idle-20s-run2.png)" in text
    assert text.count("| variant | runs |") == 1


def test_markdown_shows_a_populated_runs_figures():
    text = markdown(_document([_run()]))
    assert (
        "Cost: $12.60 latency-corrected (raw $14.52, compression $1.92) against the oracle's $12.01 and the policy "
        "bound's $12.30; corrected / oracle 1.049, corrected / bound 1.024, raw / oracle 1.209." in text
    )
    assert "6 nodes waited 80.0 real s in all for their pods to run (at most 22.0 s)" in text
    assert "| g4dn.xlarge | 20.5 | 10.78 |" in text
    assert "| inference | 40 | 12.0 | 61.0 | 70.0 | 58.0 |" in text
    assert "| chat | 40 | 37 | 2 | 1 | 0 | 0 |" in text
    assert "3 pods disrupted." in text
    assert "| Underutilized | 3 |" in text
    assert "| g4dn-shared | 12.60 | 14.52 | 12.01 | 12.30 | 1.049 |" in text
    assert "12 launched, 10 consolidated." in text
    assert '| admission | 3 | pods "x" is forbidden: exceeded quota ... |' in text
    assert "switched by the rig at simulated 15:00-24:00" in text
    assert "took 498.2 s (20.8 s per simulated hour); conditions: commit abc1234, seconds_per_hour 20." in text


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
        "stack at 20 s/h run 1: $12.60 latency-corrected (raw $14.52, compression $1.92) against the oracle's "
        "$12.01 and the policy bound's $12.30, max wait 70.0 s, 3 pods disrupted, 3 pods never ran; "
        "build/e2e/simulate-stack-20s-run1.png"
    ) in text
    assert "idle at 20 s/h run 2:" in text
    assert "max wait n/a, 0 pods disrupted, 0 pods never ran; build/e2e/simulate-idle-20s-run2.png" in text


@pytest.mark.parametrize("timeline", ["two samples", "empty"])
def test_plot_writes_a_1000_by_800_png_that_reads_back(tmp_path: Path, timeline: str):
    run = _run() if timeline == "two samples" else _empty()
    path = tmp_path / "day.png"
    plot(run, path)
    data = path.read_bytes()
    assert data.startswith(PNG_SIGNATURE)
    assert matplotlib.image.imread(path).shape[:2] == (800, 1000)


def test_the_tail_after_the_horizon_is_shown_apart_in_the_report_and_the_plot_spans_it(tmp_path: Path):
    run = _run(billed_end_hours=26.5)
    run["cost"]["tail"] = {
        "hours": 2.5,
        "usd": 3.1,
        "corrected_usd": 2.0,
        "oracle_usd": 1.5,
        "policy_usd": 1.7,
        "corrected_ratio": 1.333,
    }
    text = markdown(_document([run]))
    assert "Within the day (to 24:00): $12.60 corrected against the oracle's $12.01 (1.049)" in text
    assert "after the horizon, 2.5 simulated hours" in text
    assert "$2.00 corrected (raw $3.10) against the oracle's $1.50 and the policy bound's $1.70" in text
    with_tail, without = tmp_path / "tail.png", tmp_path / "day.png"
    plot(run, with_tail)
    plot(_run(), without)
    assert matplotlib.image.imread(with_tail).shape[:2] == (800, 1000)
    assert with_tail.read_bytes() != without.read_bytes()


def test_plot_is_the_same_bytes_twice_and_names_no_matplotlib_version(tmp_path: Path):
    first, second = tmp_path / "a.png", tmp_path / "b.png"
    plot(_run(), first)
    plot(_run(), second)
    assert first.read_bytes() == second.read_bytes()
    assert matplotlib.__version__.encode() not in first.read_bytes()


def test_gather_orders_the_runs_as_the_trace_lists_its_variants_and_writes_the_reports(tmp_path: Path, monkeypatch):
    day = load_trace(ROOT / "examples" / "workloads" / "inference-day.yaml").demand()
    runs_dir = tmp_path / "simulate-runs"
    runs_dir.mkdir()
    for variant, run in (("four-gpu-batch", 1), ("stack", 2), ("when-empty", 1), ("stack", 1)):
        document = _run(variant, run)
        (runs_dir / f"{run_stem(document)}.json").write_text(json.dumps(document))
    monkeypatch.setattr(entry, "REPORT_DIR", tmp_path)
    monkeypatch.setattr(entry, "RUNS_DIR", runs_dir)
    entry._gather(Path("examples/workloads/inference-day.yaml"), day)
    document = json.loads((tmp_path / "simulate.json").read_text())
    assert [(run["variant"], run["run"]) for run in document["runs"]] == [
        ("stack", 1),
        ("stack", 2),
        ("when-empty", 1),
        ("four-gpu-batch", 1),
    ]
    assert document["summary"]["variants"]["stack"]["runs"] == 2
    assert "## four-gpu-batch, 20 s per simulated hour, run 1" in (tmp_path / "simulate.md").read_text()


def test_a_pool_whose_oracle_was_not_proven_is_said_and_others_are_not():
    run = _run()
    run["cost"]["by_pool"]["g4dn-shared"]["oracle_unproven_minutes"] = 45.0
    text = markdown(_document([run]))
    assert "The oracle of g4dn-shared is not proven optimal for 45 minutes" in text
    assert "not proven optimal" not in markdown(_document([_run()]))

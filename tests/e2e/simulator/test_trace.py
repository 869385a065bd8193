"""`make simulate` with a trace: the file, its schedule and its variants, without the rig."""

from __future__ import annotations

from pathlib import Path

import pytest

from e2e.__main__ import _checked, main
from e2e.simulator.mix import Workload, load_simulation
from e2e.simulator.trace import (
    Trace,
    batches,
    demand_at,
    load_trace,
    merged,
    replica_schedule,
    stack_problems,
    variant_config,
)
from gpushare.errors import UserError
from tests.conftest import ROOT, raw_stack

TRACES = sorted((ROOT / "examples" / "workloads").glob("*-day.yaml"))


def _trace(**changes) -> Trace:
    base = {
        "stack": "dev",
        "deployments": [
            {
                "name": "chat",
                "team": "inference",
                "pool": "g4dn-shared",
                "gpuMemoryMib": 1536,
                "gpuCores": 10,
                "diurnal": {"trough": 2, "peak": 20, "peakAt": "14:00"},
            }
        ],
    }
    return Trace.model_validate({**base, **changes})


@pytest.mark.parametrize("path", TRACES, ids=lambda p: p.name)
def test_every_shipped_trace_is_valid_with_its_variants(path: Path):
    assert _checked(path)[1] == []
    assert isinstance(load_simulation(path), Trace)


def test_the_fixed_mix_still_loads_as_a_mix():
    assert isinstance(load_simulation(ROOT / "examples" / "workloads" / "inference-mix.yaml"), Workload)


def test_the_inference_day_peaks_at_ten_times_its_trough_and_runs_batch_at_night():
    trace = load_trace(ROOT / "examples" / "workloads" / "inference-day.yaml")
    [chat] = trace.deployments
    counts = [chat.replicas_at(minute) for minute in trace.steps()]
    assert max(counts) == 10 * min(counts)
    assert chat.replicas_at(14 * 60) == max(counts)
    night = [b.minute for b in batches(trace)]
    assert all(minute < 6 * 60 or minute >= 20 * 60 for minute in night)


def test_diurnal_curve_has_its_trough_twelve_hours_from_the_peak():
    [chat] = _trace().deployments
    assert chat.replicas_at(14 * 60) == 20
    assert chat.replicas_at(2 * 60) == 2
    assert chat.replicas_at(8 * 60) == 11  # halfway in time is halfway in replicas


def test_steps_hold_until_the_next_and_start_at_zero():
    trace = _trace(
        deployments=[{"name": "web", "team": "inference", "pool": "g4dn-shared", "replicas": {"02:00": 3, "05:30": 1}}]
    )
    [web] = trace.deployments
    assert [web.replicas_at(m) for m in (0, 119, 120, 329, 330, 1439)] == [0, 0, 3, 3, 1, 1]
    assert [(minute, count) for minute, _, count in replica_schedule(trace)] == [(0, 0), (120, 3), (330, 1)]


def test_repeated_arrivals_and_what_is_alive_when():
    trace = _trace(
        deployments=[],
        jobs=[
            {
                "name": "nb",
                "team": "ml-research",
                "pool": "g6-timeslice",
                "arrivals": [{"at": "08:00", "count": 2, "durationMinutes": 60, "everyMinutes": 30, "until": "09:00"}],
            }
        ],
    )
    assert [(b.name, b.minute) for b in batches(trace)] == [("nb-0800", 480), ("nb-0830", 510), ("nb-0900", 540)]
    assert sum(count for _, count in demand_at(trace, 8 * 60 + 45)) == 4
    assert sum(count for _, count in demand_at(trace, 9 * 60 + 30)) == 2
    assert demand_at(trace, 10 * 60) == []


BAD = """\
stack: staging
secondsPerHour: 2
colour: red
deployments:
  - name: Chat
    team: inference
    pool: g4dn-shared
    replicas: {"25:00": 3, "01:00": -1}
  - name: web
    team: inference
    pool: g4dn-shared
    diurnal: {trough: 9, peak: 3, peakAt: "2pm"}
  - name: both
    team: inference
    pool: g4dn-shared
    replicas: {"01:00": 1}
    diurnal: {trough: 1, peak: 3, peakAt: "12:00"}
jobs:
  - name: nb
    team: ml-research
    pool: g6-timeslice
    arrivals: [{at: "23:00", count: 1, durationMinutes: 10, everyMinutes: 30}]
"""


def test_a_bad_trace_names_every_key_at_fault(tmp_path: Path):
    path = tmp_path / "t.yaml"
    path.write_text(BAD)
    with pytest.raises(UserError) as caught:
        load_trace(path)
    keys = [line.split(": ")[1] for line in str(caught.value).splitlines()]
    assert keys == [
        "stack",
        "secondsPerHour",
        "deployments[0].name",
        "deployments[0].replicas.25:00",
        "deployments[0].replicas.01:00",
        "deployments[1].diurnal.peakAt",
        "deployments[2]",
        "jobs[0].arrivals[0]",
        "colour",
    ]


def test_model_checks_run_once_fields_are_valid():
    with pytest.raises(ValueError, match="is used by deployments\\[0\\] too") as caught:
        _trace(
            jobs=[
                {
                    "name": "chat",
                    "team": "ml-research",
                    "pool": "g5-shared",
                    "arrivals": [{"at": "23:50", "count": 1, "durationMinutes": 5}],
                }
            ],
            hours=12,
            variants=[{"name": "stack", "pools": {"g5-shared": {"maxGpus": 4}}}],
        )
    text = str(caught.value)
    assert "arrives after the day's 12 hours" in text
    assert "'stack' is taken" in text


def test_teams_pools_and_variant_targets_are_checked_against_the_stack():
    trace = _trace(
        deployments=[
            {"name": "a", "team": "nobody", "pool": "g5-shared", "replicas": {"00:00": 1}},
            {"name": "b", "team": "inference", "pool": "g5-shared", "replicas": {"00:00": 1}},
        ],
        variants=[{"name": "v", "pools": {"g9": {"maxGpus": 1}}, "teams": {"ghosts": {"priority": "batch"}}}],
    )
    problems = stack_problems(trace, raw_stack("dev"))
    assert [line.split(":")[0] for line in problems] == [
        "deployments[0].team",
        "deployments[1].pool",
        "variants[0].pools.g9",
        "variants[0].teams.ghosts",
    ]
    assert "allowed: g4dn-shared" in problems[1]


def test_a_variant_changes_only_what_it_names():
    config = raw_stack("dev")
    variant = _trace(
        variants=[
            {
                "name": "v",
                "pools": {"g4dn-shared": {"disruption": {"consolidationPolicy": "WhenEmptyOrUnderutilized"}}},
                "teams": {"ml-research": {"quota": {"sharedGpus": None}}},
            }
        ]
    ).variants[0]
    changed = variant_config(config, variant)
    pools = {pool["name"]: pool for pool in changed["gpushare:pools"]}
    assert pools["g4dn-shared"]["disruption"]["consolidationPolicy"] == "WhenEmptyOrUnderutilized"
    assert pools["g4dn-shared"]["disruption"]["budgets"] == config["gpushare:pools"][1]["disruption"]["budgets"]
    assert "sharedGpus" not in changed["gpushare:teams"][0]["quota"]
    assert changed["gpushare:teams"][0]["quota"]["gpus"] == config["gpushare:teams"][0]["quota"]["gpus"]
    assert changed["gpushare:cluster"] == config["gpushare:cluster"]
    assert config == raw_stack("dev")  # the stack's own config is untouched


def test_merged_replaces_lists_and_removes_null_keys():
    assert merged({"a": [1, 2], "b": {"c": 1, "d": 2}}, {"a": [3], "b": {"c": None}}) == {"a": [3], "b": {"d": 2}}


def test_a_variant_the_program_refuses_is_a_problem_of_the_trace(tmp_path: Path):
    path = tmp_path / "t.yaml"
    path.write_text(
        "stack: dev\n"
        "deployments:\n"
        "  - {name: web, team: inference, pool: g4dn-shared, replicas: {'00:00': 1}}\n"
        "variants:\n"
        "  - {name: bad, pools: {g4dn-shared: {maxGpus: -3}}}\n"
    )
    [problem] = _checked(path)[1]
    assert problem.startswith(f"{path}: variants[0] (bad): ")
    assert "maxGpus" in problem


def test_make_simulate_refuses_a_bad_trace_before_building_anything(tmp_path: Path, capsys):
    path = tmp_path / "t.yaml"
    path.write_text(BAD)
    assert main(["--simulate", str(path)]) == 2
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 9
    assert all(line.startswith(f"e2e: {path}: ") for line in lines)


def test_runs_repeat_a_trace_not_a_fixed_mix(capsys):
    assert main(["--simulate", str(ROOT / "examples" / "workloads" / "inference-mix.yaml"), "--runs", "2"]) == 2
    assert "a fixed mix runs once" in capsys.readouterr().err

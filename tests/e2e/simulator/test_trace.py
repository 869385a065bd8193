"""`make simulate` with a trace: the file and its schedule, without the rig."""

from __future__ import annotations

from pathlib import Path

import pytest

from e2e.__main__ import _checked, main
from e2e.simulator.demand import Demand
from e2e.simulator.mix import Workload, load_simulation
from e2e.simulator.trace import batches, load_trace, replica_schedule, trace_problems
from gpushare.errors import UserError
from gpushare.files import read_yaml
from tests.conftest import ROOT, raw_stack
from tests.e2e.simulator.sample_trace import BATCH, CHAT, keys_of, problems_of, raw_trace, sample_trace

TRACES = sorted((ROOT / "examples" / "workloads").glob("*-day.yaml"))


@pytest.mark.plan
@pytest.mark.parametrize("path", TRACES, ids=lambda p: p.name)
def test_every_shipped_trace_is_valid_with_its_variants(path: Path):
    assert _checked(path)[1] == []
    assert isinstance(load_simulation(path), Demand)


def test_the_fixed_mix_still_loads_as_a_mix():
    assert isinstance(load_simulation(ROOT / "examples" / "workloads" / "inference-mix.yaml"), Workload)


def test_the_inference_day_peaks_at_ten_times_its_trough_and_runs_batch_at_night():
    trace = load_trace(ROOT / "examples" / "workloads" / "inference-day.yaml")
    [chat] = trace.deployments
    counts = [chat.replicas_at(minute) for minute in trace.samples()]
    assert max(counts) == 10 * min(counts)
    assert chat.replicas_at(14 * 60) == max(counts)
    night = [b.minute for b in batches(trace)]
    assert all(minute < 6 * 60 or minute >= 20 * 60 for minute in night)


def test_diurnal_curve_has_its_trough_twelve_hours_from_the_peak():
    [chat] = sample_trace().deployments
    assert chat.replicas_at(14 * 60) == 20
    assert chat.replicas_at(2 * 60) == 2
    assert chat.replicas_at(8 * 60) == 11  # halfway in time is halfway in replicas


def test_steps_apply_at_their_exact_minute_off_the_step_grid():
    """A step at 00:07 with 15-minute steps happens at 00:07, not 00:15 (the rig and the oracle both follow it)."""
    web = {"name": "web", "team": "inference", "pool": "g4dn-shared", "gpuMemoryMib": 1024, "gpuCores": 5}
    trace = sample_trace(deployments=[{**web, "replicas": {"00:07": 3, "05:31": 1}}], stepMinutes=15)
    [group] = trace.deployments
    assert [group.replicas_at(m) for m in (0, 6, 7, 330, 331, 1439)] == [0, 0, 3, 3, 1, 1]
    assert [(c.minute, c.replicas) for c in replica_schedule(trace)] == [(0, 0), (7, 3), (331, 1)]


def test_a_diurnal_curve_is_sampled_every_step_even_when_steps_do_not_divide_the_day():
    trace = sample_trace(stepMinutes=7, hours=24)
    minutes = [change.minute for change in replica_schedule(trace)]
    assert all(minute % 7 == 0 for minute in minutes) and max(minutes) < 24 * 60
    assert trace.demand().horizon_minutes == 24 * 60  # the day is 1440 minutes whatever the step


def test_repeated_arrivals_become_one_job_each_with_their_duration_and_gang():
    trace = sample_trace(
        deployments=[],
        jobs=[
            {
                "name": "nb",
                "team": "ml-research",
                "pool": "g6-timeslice",
                "gang": True,
                "arrivals": [{"at": "08:00", "count": 2, "durationMinutes": 60, "everyMinutes": 30, "until": "09:00"}],
            }
        ],
    )
    found = batches(trace)
    assert [(b.name, b.minute, b.count, b.duration_minutes, b.gang) for b in found] == [
        ("nb-0800", 480, 2, 60, True),
        ("nb-0830", 510, 2, 60, True),
        ("nb-0900", 540, 2, 60, True),
    ]
    assert trace.demand().horizon_minutes == 24 * 60


# --- the validator: every problem, one line each ---------------------------------------------------------------


def test_every_shipped_trace_has_no_problem():
    for path in TRACES:
        raw = read_yaml(path)
        assert trace_problems(raw, raw_stack(raw["stack"])) == [], path


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


def test_a_schema_error_does_not_hide_the_checks_across_keys_nor_the_stacks():
    """A bad weekday, a fixed-mix key and a trace-level mistake each get their line, and so do the team, the pool
    and the step after the day: two problems are never one line."""
    raw = raw_trace(
        weekday="someday",
        hours=12,
        deployments=[
            {**{k: v for k, v in CHAT.items() if k != "diurnal"}, "count": 3, "replicas": {"00:00": 1, "13:00": 2}},
            {**CHAT, "name": "other", "team": "nobody"},
        ],
        jobs=[{**BATCH, "name": "chat"}],
    )
    problems = problems_of(raw)
    assert keys_of(problems) == [
        "weekday",
        "deployments[0].count",
        "jobs[0].name",
        "deployments[0].replicas.13:00",
        "deployments[1].team",
    ]
    assert "is used by deployments[0] too" in problems[2]
    assert "step at 13:00 never applies: the day's 12 hours end at 12:00" in problems[3]


def test_a_fixed_mix_pasted_into_a_trace_names_the_keys_that_are_wrong():
    """A mix's top-level `pods` and a group's `count` are named as fixed-mix keys, with what a trace writes."""
    raw = raw_trace(pods=[{"name": "x"}], deployments=[{**CHAT, "count": 3}], jobs=[{**BATCH, "count": 2}])
    problems = problems_of(raw)
    assert keys_of(problems) == ["deployments[0].count", "jobs[0].count", "pods"]
    assert "a fixed-mix key; a deployment group's replicas follow `replicas` steps or a `diurnal` curve" in problems[0]
    assert "a job group's pods come in `arrivals`" in problems[1]
    assert "a trace lists `deployments` and `jobs` instead" in problems[2]


def test_a_mix_file_with_a_trace_key_is_read_as_a_trace(tmp_path: Path):
    path = tmp_path / "t.yaml"
    path.write_text("stack: dev\nsecondsPerHour: 20\npods: [{name: a}]\n")
    with pytest.raises(UserError) as caught:
        load_simulation(path)
    assert "pods: a fixed-mix key" in str(caught.value)


def test_replica_steps_and_arrivals_after_the_day_are_refused_at_their_key():
    late_step = {**CHAT, "diurnal": None, "replicas": {"05:59": 1, "06:00": 2}}
    late_arrival = {**BATCH, "arrivals": [{"at": "06:00", "count": 1, "durationMinutes": 5}]}
    late_until = {
        **BATCH,
        "name": "again",
        "arrivals": [{"at": "05:00", "count": 1, "durationMinutes": 5, "everyMinutes": 30, "until": "06:30"}],
    }
    problems = problems_of(
        raw_trace(
            hours=6,
            deployments=[{k: v for k, v in late_step.items() if v is not None}],
            jobs=[late_arrival, late_until],
        )
    )
    assert keys_of(problems) == ["deployments[0].replicas.06:00", "jobs[0].arrivals[0].at", "jobs[1].arrivals[0].until"]
    on_time = {**BATCH, "arrivals": [{"at": "05:59", "count": 1, "durationMinutes": 120}]}
    assert problems_of(raw_trace(hours=6, jobs=[on_time])) == []  # a batch may run past the day: the horizon follows it


def test_variant_names_are_unique_and_not_the_stacks():
    raw = raw_trace(
        variants=[
            {"name": "stack", "pools": {"g4dn-shared": {"maxGpus": 3}}},
            {"name": "v", "pools": {"g4dn-shared": {"maxGpus": 3}}},
            {"name": "v", "pools": {"g4dn-shared": {"maxGpus": 2}}},
        ]
    )
    assert keys_of(problems_of(raw)) == ["variants[0].name", "variants[2].name"]


def test_make_simulate_refuses_a_bad_trace_before_building_anything(tmp_path: Path, capsys):
    path = tmp_path / "t.yaml"
    path.write_text(BAD)
    assert main(["--simulate", str(path)]) == 2
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 9
    assert all(line.startswith(f"e2e: {path}: ") for line in lines)


def test_runs_and_speeds_repeat_a_day_not_a_fixed_mix(capsys):
    mix = str(ROOT / "examples" / "workloads" / "inference-mix.yaml")
    assert main(["--simulate", mix, "--runs", "2"]) == 2
    assert main(["--simulate", mix, "--speeds", "20,60"]) == 2
    assert "a fixed mix runs once" in capsys.readouterr().err


def test_arrivals_of_one_group_at_the_same_minute_are_jobs_of_their_own_names():
    """notebook-day's half-hourly notebook and its 09:30 burst arrive at the same minute: two Jobs, two names."""
    notebook = {
        **BATCH,
        "arrivals": [
            {"at": "09:00", "count": 1, "durationMinutes": 60, "everyMinutes": 30, "until": "10:00"},
            {"at": "09:30", "count": 2, "durationMinutes": 90},
        ],
    }
    found = batches(sample_trace(deployments=[], jobs=[notebook]))
    assert [(b.name, b.count) for b in found] == [
        ("embed-0900", 1),
        ("embed-0930", 1),
        ("embed-0930-2", 2),
        ("embed-1000", 1),
    ]


@pytest.mark.parametrize("path", TRACES, ids=lambda p: p.name)
def test_every_shipped_days_jobs_have_names_of_their_own(path):
    names = [batch.name for batch in batches(load_trace(path))]
    assert len(names) == len(set(names))

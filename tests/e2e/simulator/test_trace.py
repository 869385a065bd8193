"""`make simulate` with a trace: the file, its schedule and its variants, without the rig."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from e2e.__main__ import _checked, main
from e2e.simulator.mix import Workload, load_simulation
from e2e.simulator.trace import (
    Demand,
    NodeRoom,
    PodRequests,
    PoolRoom,
    Trace,
    batches,
    load_trace,
    merged,
    replica_schedule,
    trace_problems,
    variant_config,
)
from gpushare.errors import UserError
from gpushare.files import read_yaml
from tests.conftest import ROOT, raw_stack

TRACES = sorted((ROOT / "examples" / "workloads").glob("*-day.yaml"))
CHAT = {
    "name": "chat",
    "team": "inference",
    "pool": "g4dn-shared",
    "gpuMemoryMib": 1536,
    "gpuCores": 10,
    "diurnal": {"trough": 2, "peak": 20, "peakAt": "14:00"},
}
BATCH = {
    "name": "embed",
    "team": "ml-research",
    "pool": "g5-shared",
    "gpuMemoryMib": 8192,
    "gpuCores": 50,
    "arrivals": [{"at": "00:30", "count": 2, "durationMinutes": 60}],
}


def _raw(**changes: Any) -> dict[str, Any]:
    return {"stack": "dev", "deployments": [copy.deepcopy(CHAT)], **changes}


def _trace(**changes: Any) -> Trace:
    return Trace.model_validate(_raw(**changes))


def _problems(raw: dict[str, Any], stack: str = "dev") -> list[str]:
    return trace_problems(raw, raw_stack(stack))


def _keys(problems: list[str]) -> list[str]:
    return [line.split(": ")[0] for line in problems]


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
    [chat] = _trace().deployments
    assert chat.replicas_at(14 * 60) == 20
    assert chat.replicas_at(2 * 60) == 2
    assert chat.replicas_at(8 * 60) == 11  # halfway in time is halfway in replicas


def test_steps_apply_at_their_exact_minute_off_the_step_grid():
    """A step at 00:07 with 15-minute steps happens at 00:07, not 00:15 (the rig and the oracle both follow it)."""
    web = {"name": "web", "team": "inference", "pool": "g4dn-shared", "gpuMemoryMib": 1024, "gpuCores": 5}
    trace = _trace(deployments=[{**web, "replicas": {"00:07": 3, "05:31": 1}}], stepMinutes=15)
    [group] = trace.deployments
    assert [group.replicas_at(m) for m in (0, 6, 7, 330, 331, 1439)] == [0, 0, 3, 3, 1, 1]
    assert [(c.minute, c.replicas) for c in replica_schedule(trace)] == [(0, 0), (7, 3), (331, 1)]


def test_a_diurnal_curve_is_sampled_every_step_even_when_steps_do_not_divide_the_day():
    trace = _trace(stepMinutes=7, hours=24)
    minutes = [change.minute for change in replica_schedule(trace)]
    assert all(minute % 7 == 0 for minute in minutes) and max(minutes) < 24 * 60
    assert trace.demand().horizon_minutes == 24 * 60  # the day is 1440 minutes whatever the step


def test_repeated_arrivals_become_one_job_each_with_their_duration_and_gang():
    trace = _trace(
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


def test_a_batch_past_the_days_end_extends_the_horizon():
    demand = _trace(
        hours=6, jobs=[{**BATCH, "arrivals": [{"at": "05:30", "count": 1, "durationMinutes": 90}]}]
    ).demand()
    assert demand.day_minutes == 360
    assert demand.horizon_minutes == 420


def test_the_00_00_state_is_each_deployments_count_at_midnight():
    web = {"name": "web", "team": "inference", "pool": "g4dn-shared", "gpuMemoryMib": 1024, "gpuCores": 5}
    demand = _trace(deployments=[CHAT, {**web, "replicas": {"02:00": 3}}]).demand()
    assert demand.replicas_at_start() == {"chat": CHAT["diurnal"]["trough"] + 1, "web": 0}


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
    raw = _raw(
        weekday="someday",
        hours=12,
        deployments=[
            {**{k: v for k, v in CHAT.items() if k != "diurnal"}, "count": 3, "replicas": {"00:00": 1, "13:00": 2}},
            {**CHAT, "name": "other", "team": "nobody"},
        ],
        jobs=[{**BATCH, "name": "chat"}],
    )
    problems = _problems(raw)
    assert _keys(problems) == [
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
    raw = _raw(pods=[{"name": "x"}], deployments=[{**CHAT, "count": 3}], jobs=[{**BATCH, "count": 2}])
    problems = _problems(raw)
    assert _keys(problems) == ["deployments[0].count", "jobs[0].count", "pods"]
    assert "a fixed-mix key; a deployment group's replicas follow `replicas` steps or a `diurnal` curve" in problems[0]
    assert "a job group's pods come in `arrivals`" in problems[1]
    assert "a trace lists `deployments` and `jobs` instead" in problems[2]


def test_a_mix_file_with_a_trace_key_is_read_as_a_trace(tmp_path: Path):
    path = tmp_path / "t.yaml"
    path.write_text("stack: dev\nsecondsPerHour: 20\npods: [{name: a}]\n")
    with pytest.raises(UserError) as caught:
        load_simulation(path)
    assert "pods: a fixed-mix key" in str(caught.value)


# Class 1: a trace that can never run, or that the rig would silently change. One valid and one breaking case per
# way it can break, judged by the stack's own capacity model.
NEVER_HOLDS = [
    ("more vGPUs than any type of the pool has GPUs", {"vgpus": 2}, "vgpus", "at most 1 GPU(s) per node"),
    ("more gpuMemoryMib than one GPU registers", {"gpuMemoryMib": 15361}, "gpuMemoryMib", "at most 15360 MiB"),
    ("more CPU than any node offers pods", {"cpu": "8"}, "cpu", "at most 7900m"),
    ("more memory than any node offers pods", {"memory": "32Gi"}, "memory", "at most 32758Mi"),
    ("a HAMi pool's group without gpuMemoryMib", {"gpuMemoryMib": None}, "gpuMemoryMib", "required on pool"),
    ("a HAMi pool's group without gpuCores", {"gpuCores": None}, "gpuCores", "required on pool"),
]


@pytest.mark.parametrize(("case", "change", "key", "says"), NEVER_HOLDS, ids=[c[0] for c in NEVER_HOLDS])
def test_a_pod_no_node_of_its_pool_can_hold_is_refused(case: str, change: dict[str, Any], key: str, says: str):
    group = {k: v for k, v in {**CHAT, **change}.items() if v is not None}
    [problem] = _problems(_raw(deployments=[group]))
    assert problem.startswith(f"deployments[0].{key}: ")
    assert says in problem


FITS = [
    ("one vGPU", {"vgpus": 1}),
    ("a whole T4's registered memory", {"gpuMemoryMib": 15360}),
    ("the largest node's CPU less the rig's reserve", {"cpu": "7900m"}),
    ("the largest node's memory less the rig's reserve", {"memory": "32000Mi"}),
]


@pytest.mark.parametrize(("case", "change"), FITS, ids=[c[0] for c in FITS])
def test_a_pod_at_the_pools_limit_is_accepted(case: str, change: dict[str, Any]):
    assert _problems(_raw(deployments=[{**CHAT, **change}])) == []


def test_each_request_can_fit_some_type_but_not_all_on_the_same_one():
    """A pool whose many-GPU type has little CPU and whose CPU-rich type has one GPU holds neither pod that needs
    both: each key is within some type, the pod within none."""
    rooms = (NodeRoom("gpus", 4, 23028, 100, 8000, 65536), NodeRoom("cpus", 1, 23028, 100, 32000, 65536))
    pool = PoolRoom("mixed", "hami", rooms)
    fits = PodRequests(name="a", team="t", pool="mixed", vgpus=4, gpuMemoryMib=1000, gpuCores=10, cpu="4")
    assert pool.holds(fits) == []
    [(key, problem)] = pool.holds(fits.model_copy(update={"cpu": "16"}))
    assert key == "(group)"
    assert problem.startswith("no instance type of pool mixed holds cpu 16000m, memory 1024Mi, vgpus 4")


def test_time_sliced_pools_give_a_container_one_replica():
    notebook = {"name": "nb", "team": "ml-research", "pool": "g6-timeslice", "replicas": {"08:00": 1}}
    assert _problems(_raw(deployments=[notebook])) == []
    [problem] = _problems(_raw(deployments=[{**notebook, "vgpus": 2}]))
    assert problem.startswith("deployments[0].vgpus: 2 on pool g6-timeslice (time-sliced)")
    assert "allowed: 1" in problem


def test_replica_steps_and_arrivals_after_the_day_are_refused_at_their_key():
    late_step = {**CHAT, "diurnal": None, "replicas": {"05:59": 1, "06:00": 2}}
    late_arrival = {**BATCH, "arrivals": [{"at": "06:00", "count": 1, "durationMinutes": 5}]}
    late_until = {
        **BATCH,
        "name": "again",
        "arrivals": [{"at": "05:00", "count": 1, "durationMinutes": 5, "everyMinutes": 30, "until": "06:30"}],
    }
    problems = _problems(
        _raw(
            hours=6,
            deployments=[{k: v for k, v in late_step.items() if v is not None}],
            jobs=[late_arrival, late_until],
        )
    )
    assert _keys(problems) == ["deployments[0].replicas.06:00", "jobs[0].arrivals[0].at", "jobs[1].arrivals[0].until"]
    on_time = {**BATCH, "arrivals": [{"at": "05:59", "count": 1, "durationMinutes": 120}]}
    assert _problems(_raw(hours=6, jobs=[on_time])) == []  # a batch may run past the day: the horizon follows it


def test_teams_and_pools_are_checked_against_the_stack():
    problems = _problems(_raw(deployments=[{**CHAT, "team": "nobody"}, {**CHAT, "name": "b", "pool": "g5-shared"}]))
    assert _keys(problems) == ["deployments[0].team", "deployments[1].pool"]
    assert "allowed: g4dn-shared" in problems[1]


# Class 2: variants that do not do what they say, judged against the trace's own groups.
# Each case runs with the chat service and the batch, except where it needs a team no group runs in.
VARIANT_BREAKS = [
    (
        "sets the value the stack already has",
        {"pools": {"g4dn-shared": {"disruption": {"consolidationPolicy": "WhenEmptyOrUnderutilized"}}}},
        "variants[0].pools.g4dn-shared.disruption.consolidationPolicy",
        "is what the stack has already",
    ),
    (
        "sets the stack's default",
        {"pools": {"g5-shared": {"disruption": {"consolidateAfter": "10m"}}}},
        "variants[0].pools.g5-shared.disruption.consolidateAfter",
        "is what the stack has already",
    ),
    (
        "removes a key the stack does not set",
        {"pools": {"g5-shared": {"replicas": None}}},
        "variants[0].pools.g5-shared.replicas",
        "removes a key the stack does not set",
    ),
    (
        "changes a pool no group runs on",
        {"pools": {"g6-timeslice": {"maxGpus": 1}}},
        "variants[0].pools.g6-timeslice",
        "no group of this trace runs on pool g6-timeslice",
    ),
    (
        "changes a team no group runs in",
        {"teams": {"inference": {"priority": "standard"}}},
        "variants[0].teams.inference",
        "no group of this trace runs in team inference",
    ),
    (
        "takes a group's pool away from its team",
        {"teams": {"ml-research": {"pools": ["g4dn-shared", "g6-timeslice"]}}},
        "variants[0].teams.ml-research.pools",
        "takes pool g5-shared away from team ml-research, which jobs[0] (embed) runs on",
    ),
]


@pytest.mark.parametrize(("case", "variant", "key", "says"), VARIANT_BREAKS, ids=[v[0] for v in VARIANT_BREAKS])
def test_a_variant_that_cannot_show_anything_is_refused(case: str, variant: dict[str, Any], key: str, says: str):
    chat = [] if "inference" in variant.get("teams", {}) else [CHAT]
    raw = _raw(deployments=chat, jobs=[BATCH], variants=[{"name": "v", **variant}])
    problems = _problems(raw)
    assert _keys(problems) == [key]
    assert says in problems[0]


def test_a_variant_whose_pool_cannot_hold_a_group_the_stack_holds_names_the_variant():
    """8 vCPUs fit g5-shared's g5.2xlarge and g5.4xlarge; the variant keeps only g5.xlarge (4 vCPUs)."""
    job = {**BATCH, "cpu": "8"}
    assert _problems(_raw(deployments=[], jobs=[job])) == []
    raw = _raw(
        deployments=[],
        jobs=[job],
        variants=[{"name": "small", "pools": {"g5-shared": {"instanceTypes": ["g5.xlarge"]}}}],
    )
    [problem] = _problems(raw)
    assert problem.startswith("jobs[0].cpu: in variant small: 8000m is more than any node of the pool offers")


def test_valid_variants_of_each_kind_pass():
    raw = _raw(
        deployments=[CHAT],
        jobs=[BATCH],
        variants=[
            {"name": "a", "pools": {"g4dn-shared": {"disruption": {"consolidationPolicy": "WhenEmpty"}}}},
            {"name": "b", "teams": {"ml-research": {"pools": ["g5-shared"]}}},
            {"name": "c", "pools": {"g5-shared": {"instanceTypes": ["g5.12xlarge"]}}},
        ],
    )
    assert _problems(raw) == []


def test_variant_names_are_unique_and_not_the_stacks():
    raw = _raw(
        variants=[
            {"name": "stack", "pools": {"g4dn-shared": {"maxGpus": 3}}},
            {"name": "v", "pools": {"g4dn-shared": {"maxGpus": 3}}},
            {"name": "v", "pools": {"g4dn-shared": {"maxGpus": 2}}},
        ]
    )
    assert _keys(_problems(raw)) == ["variants[0].name", "variants[2].name"]


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


@pytest.mark.plan
def test_a_variant_the_program_refuses_is_a_problem_of_the_trace(tmp_path: Path):
    path = tmp_path / "t.yaml"
    path.write_text(
        "stack: dev\n"
        "deployments:\n"
        "  - {name: web, team: inference, pool: g4dn-shared, gpuMemoryMib: 1024, gpuCores: 5, replicas: {'00:00': 1}}\n"
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


def test_runs_and_speeds_repeat_a_day_not_a_fixed_mix(capsys):
    mix = str(ROOT / "examples" / "workloads" / "inference-mix.yaml")
    assert main(["--simulate", mix, "--runs", "2"]) == 2
    assert main(["--simulate", mix, "--speeds", "20,60"]) == 2
    assert "a fixed mix runs once" in capsys.readouterr().err


def test_the_shortest_lived_deployment_pods_are_those_added_last_before_a_fall():
    """12 -> 20 at 03:00, down to 4 at 04:30: the eight added at 03:00 live 90 minutes, the ten added at 01:00
    (down at 04:30 too) 210; the 00:00 pods run before the clock and do not count."""
    steps = {"00:00": 2, "01:00": 12, "03:00": 20, "04:30": 4}
    chat = {**{k: v for k, v in CHAT.items() if k != "diurnal"}, "replicas": steps}
    assert _trace(deployments=[chat]).demand().shortest_life() == ("chat", 180, 90)
    rising = {**chat, "replicas": {"00:00": 2, "01:00": 12}}
    assert _trace(deployments=[rising]).demand().shortest_life() is None
    assert _trace(deployments=[{**chat, "replicas": {"00:00": 20, "01:00": 4}}]).demand().shortest_life() is None


def test_the_busiest_hour_counts_rises_and_arrivals_from_each_addition():
    """Ten replicas added at 01:00 and a batch of two at 00:30: the hour from 00:30 holds both (12 pods); the
    00:00 state is not an addition."""
    chat = {**{k: v for k, v in CHAT.items() if k != "diurnal"}, "replicas": {"00:00": 2, "01:00": 12}}
    assert _trace(deployments=[chat], jobs=[BATCH]).demand().busiest_hour() == (30, 12)
    assert _trace(deployments=[{**chat, "replicas": {"00:00": 2}}]).demand().busiest_hour() is None


def test_arrivals_of_one_group_at_the_same_minute_are_jobs_of_their_own_names():
    """notebook-day's half-hourly notebook and its 09:30 burst arrive at the same minute: two Jobs, two names."""
    notebook = {
        **BATCH,
        "arrivals": [
            {"at": "09:00", "count": 1, "durationMinutes": 60, "everyMinutes": 30, "until": "10:00"},
            {"at": "09:30", "count": 2, "durationMinutes": 90},
        ],
    }
    found = batches(_trace(deployments=[], jobs=[notebook]))
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

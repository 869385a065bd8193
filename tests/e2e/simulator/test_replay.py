"""Replaying a cluster's own day: the pod list, the mapping, what they become, every problem at once (no rig)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from e2e.__main__ import _checked, main
from e2e.simulator.demand import Demand
from e2e.simulator.mix import load_simulation
from e2e.simulator.replay import load_replay, quantity
from gpushare.errors import UserError
from tests.conftest import ROOT, raw_stack
from tools.production_day import KINDS, SHIPPED, pod_list

CONFIGS = {stack: raw_stack(stack) for stack in ("dev", "prod")}
MAPPING = ROOT / "examples" / "workloads" / "production-day.mapping.yaml"
HEADER = "namespace,name,created,deleted,cpu,memory,gpus,gpuShare,gpuMemoryMib,gpuCores\n"
RULES = """\
stack: dev
start: "2026-11-18T00:00:00Z"
hours: 12
rules:
  - {name: chat, namespace: inference, team: inference, pool: g4dn-shared}
  - {name: nb, namespace: ml-research, pod: "nb-*", team: ml-research, pool: g6-timeslice}
  - {name: batch, namespace: "ml-*", team: ml-research, pool: g5-shared, wholeGpuMemoryMib: 20000}
"""


def _files(tmp_path: Path, rows: str, mapping: str = RULES, suffix: str = ".csv") -> tuple[Path, Path]:
    pods, rules = tmp_path / f"pods{suffix}", tmp_path / "mapping.yaml"
    pods.write_text(rows if suffix != ".csv" else HEADER + rows)
    rules.write_text(mapping)
    return pods, rules


def _replay(tmp_path: Path, rows: str, mapping: str = RULES, suffix: str = ".csv") -> Demand:
    return load_replay(*_files(tmp_path, rows, mapping, suffix), CONFIGS)


def _problems(tmp_path: Path, rows: str, mapping: str = RULES) -> list[str]:
    with pytest.raises(UserError) as caught:
        _replay(tmp_path, rows, mapping)
    return [re.sub(r"^\S+?\.(csv|jsonl|yaml):\s?", "", line) for line in str(caught.value).splitlines()]


def test_each_pod_becomes_a_one_pod_job_from_its_creation_for_its_lifetime(tmp_path: Path):
    demand = _replay(
        tmp_path,
        "inference,chat-a,2026-11-18T01:30:00Z,2026-11-18T03:00:00Z,500m,2Gi,1,0.25,,\n"
        "inference,chat-b,2026-11-17T23:00:00Z,2026-11-18T00:30:00Z,500m,2Gi,1,0.25,,\n"
        "ml-research,nb-1,2026-11-18T11:00:00Z,,250m,1Gi,1,0.5,,\n"
        "ml-research,train,2026-11-18T02:00:00+01:00,2026-11-18T02:30:00+01:00,2,4Gi,1,,8192,40\n"
        "inference,late,2026-11-18T12:00:00Z,2026-11-18T13:00:00Z,1,1Gi,1,0.1,,\n",
    )
    assert demand.stack == "dev" and demand.weekday == "wed" and demand.hours == 12
    found = [(b.name, b.minute, b.duration_minutes, b.running_at_start) for b in demand.batches]
    assert found == [
        ("r00003", 0.0, 30.0, True),  # alive at 00:00: part of the 00:00 state, for what was left of it
        ("r00005", 60.0, 30.0, False),  # 02:00 at UTC+1 is 01:00 UTC
        ("r00002", 90.0, 90.0, False),
        ("r00004", 660.0, 60.0, False),  # no deletion: to the day's end
    ]  # the pod created at the day's end is outside it
    groups = {b.name: b.group for b in demand.batches}
    # A quarter of a T4 as HAMi registers it (15360 MiB), and a quarter of its cores.
    assert (groups["r00002"].gpu_memory_mib, groups["r00002"].gpu_cores, groups["r00002"].cpu) == (3840, 25, "500m")
    assert (groups["r00005"].gpu_memory_mib, groups["r00005"].gpu_cores, groups["r00005"].memory) == (
        8192,
        40,
        "4096Mi",
    )
    assert groups["r00004"].gpu_memory_mib is None  # time-sliced: a replica, no HAMi memory
    assert groups["r00002"].name == groups["r00003"].name == "chat-1"  # the same asks: one group of the report


def test_a_rule_may_say_what_a_whole_gpu_is_worth_and_memory_alone_gives_cores(tmp_path: Path):
    demand = _replay(
        tmp_path,
        "ml-research,job,2026-11-18T01:00:00Z,2026-11-18T02:00:00Z,1,1Gi,1,0.5,,\n"
        "ml-research,mem,2026-11-18T01:00:00Z,2026-11-18T02:00:00Z,1,1Gi,1,,5757,\n",
    )
    job, mem = (batch.group for batch in demand.batches)
    assert (job.gpu_memory_mib, job.gpu_cores) == (10000, 50)  # wholeGpuMemoryMib 20000
    assert (mem.gpu_memory_mib, mem.gpu_cores) == (5757, 29)  # 5757 of 20000 MiB: 29% of the cores too


def test_json_lines_read_like_csv(tmp_path: Path):
    line = {"namespace": "inference", "name": "a", "created": "2026-11-18T01:00:00Z", "gpus": 1, "gpuShare": 0.5}
    demand = _replay(tmp_path, json.dumps(line) + "\n\n" + json.dumps({**line, "name": "b"}) + "\n", suffix=".jsonl")
    assert [batch.name for batch in demand.batches] == ["r00001", "r00003"]


def test_every_problem_of_the_list_and_the_mapping_at_once(tmp_path: Path):
    mapping = RULES.replace("hours: 12", "hours: 30")
    problems = _problems(
        tmp_path,
        "inference,a,yesterday,,1,1Gi,1,0.25,,\n"
        "inference,b,2026-11-18T01:00:00Z,2026-11-18T00:00:00Z,1,1Gi,1,0.25,100,\n"
        "ml-research,c,2026-11-18T01:00:00Z,,lots,1Gi,0,,,\n",
        mapping,
    )
    assert problems == [
        "hours: 30 is too large; allowed: at most 24",
        "2: created: takes a time like 2026-11-18T01:00:00Z, or a date like 2026-11-18 (got 'yesterday')",
        "3: gpuShare: give gpuShare or gpuMemoryMib/gpuCores, not both",
        "3: deleted: 2026-11-18T00:00:00+00:00 is before created 2026-11-18T01:00:00+00:00",
        "4: cpu: 'lots' is not a Kubernetes quantity (e.g. 500m, 4, 16Gi)",
        "4: gpus: '0' is too small; allowed: at least 1",
    ]


def test_the_stack_and_the_pools_judge_the_replayed_pods(tmp_path: Path):
    mapping = RULES.replace("team: inference, pool: g4dn-shared", "team: inference, pool: g5-shared")
    problems = _problems(tmp_path, "inference,a,2026-11-18T01:00:00Z,,1,1Gi,1,0.25,,\n", mapping)
    assert problems == ["rules[0].pool: 'g5-shared' is not a pool of team inference; allowed: g4dn-shared"]
    many = "".join(f"inference,p{i},2026-11-18T01:00:00Z,,1,64Gi,1,0.25,,\n" for i in range(5))
    unmatched, too_big = _problems(tmp_path, "ops,x,2026-11-18T01:00:00Z,,1,1Gi,1,0.25,,\n" + many)
    assert unmatched.startswith("2: ops/x: no rule of") and unmatched.endswith("matches every pod)")
    assert too_big.startswith("line(s) 3, 4, 5 and 2 more: memory: 65536Mi is more than any node of the pool offers")


def test_a_list_with_no_pod_in_the_day_says_where_its_day_starts(tmp_path: Path):
    [problem] = _problems(tmp_path, "inference,a,2026-11-20T01:00:00Z,,1,1Gi,1,0.25,,\n")
    assert "no pod lives between 2026-11-18T00:00:00+00:00 and 2026-11-18T12:00:00+00:00 (1 outside)" in problem


@pytest.mark.parametrize(("text", "value"), [("500m", 0.5), ("4", 4), ("1.5", 1.5), ("16Gi", 16 * 2**30), ("2G", 2e9)])
def test_kubernetes_quantities(text: str, value: float):
    assert quantity(text) == value


@pytest.mark.plan
def test_the_shipped_production_day_is_the_generators_and_replays_on_prod():
    """250 synthetic pods of five kinds; a quarter of an L4 up to whole A10Gs; CPU asks that need the larger types."""
    assert SHIPPED.read_text() == pod_list()
    demand = load_simulation(SHIPPED, MAPPING)
    assert isinstance(demand, Demand) and demand.stack == "prod"
    assert len(demand.batches) >= 0.95 * sum(KINDS.values())
    fractional = [b for b in demand.batches if b.group.gpu_cores and b.group.gpu_cores < 100]
    assert len(fractional) > len(demand.batches) / 2
    assert max(int(b.group.cpu.removesuffix("m")) for b in demand.batches) >= 16000
    assert any(b.running_at_start for b in demand.batches)
    assert _checked(SHIPPED, MAPPING)[1] == []


def test_make_simulate_refuses_a_bad_replay_before_building_anything(tmp_path: Path, capsys):
    pods, mapping = _files(tmp_path, "inference,a,yesterday,,1,1Gi,1,0.25,,\n")
    assert main(["--simulate", str(pods), "--mapping", str(mapping)]) == 2
    [line] = capsys.readouterr().err.splitlines()
    assert line.startswith(f"e2e: {pods}:2: created: ")


def _peak(demand: Demand) -> int:
    events: list[tuple[float, int]] = []
    for batch in demand.batches:
        events += [(batch.minute, batch.count), (batch.ends, -batch.count)]
    alive = peak = 0
    for _, change in sorted(events):
        alive += change
        peak = max(peak, alive)
    return peak


def test_the_production_day_peaks_at_about_fifty_pods():
    demand: Any = load_simulation(SHIPPED, MAPPING)
    assert 45 <= _peak(demand) <= 60


KUBECTL_PODS = {
    "items": [
        {
            "metadata": {"namespace": "inference", "name": "chat-1", "creationTimestamp": "2026-11-18T01:00:00Z"},
            "spec": {
                "containers": [
                    {"name": "sidecar", "resources": {"requests": {"cpu": "100m"}}},
                    {
                        "name": "server",
                        "resources": {
                            "requests": {"cpu": "2", "memory": "8Gi"},
                            "limits": {"nvidia.com/gpu": "1", "nvidia.com/gpumem": "4096", "nvidia.com/gpucores": "25"},
                        },
                    },
                ]
            },
            "status": {"containerStatuses": [{"state": {"running": {}}}]},
        },
        {
            "metadata": {"namespace": "ml-research", "name": "nb-1", "creationTimestamp": "2026-11-18T02:00:00Z"},
            "spec": {"containers": [{"name": "nb", "resources": {"limits": {"nvidia.com/gpu.shared": "1"}}}]},
            "status": {"containerStatuses": [{"state": {"terminated": {"finishedAt": "2026-11-18T03:30:00Z"}}}]},
        },
        {
            "metadata": {"namespace": "kube-system", "name": "coredns", "creationTimestamp": "2026-11-18T00:00:00Z"},
            "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "100m"}}}]},
        },
    ]
}


def test_the_kubectl_recipe_writes_a_pod_list_the_replay_reads(tmp_path: Path):
    """README's jq program over `kubectl get pods -A -o json`: the GPU pods only, as replayable lines."""
    jq = shutil.which("jq")
    if jq is None:
        pytest.skip("jq is not installed")
    program = ROOT / "examples" / "workloads" / "pods-from-kubectl.jq"
    lines = subprocess.run(
        [jq, "-c", "-f", str(program)], input=json.dumps(KUBECTL_PODS), capture_output=True, text=True, check=True
    ).stdout
    demand = _replay(tmp_path, lines, suffix=".jsonl")
    chat, notebook = (batch.group for batch in demand.batches)
    assert (chat.team, chat.gpu_memory_mib, chat.gpu_cores, chat.cpu) == ("inference", 4096, 25, "2000m")
    assert (notebook.pool, demand.batches[1].duration_minutes) == ("g6-timeslice", 90.0)

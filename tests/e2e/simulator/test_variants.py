"""A day's variants (e2e.simulator.variants): refused when they cannot show anything, and changing only what
they name."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from e2e.__main__ import _checked
from e2e.simulator.variants import merged, variant_config
from tests.conftest import raw_stack
from tests.e2e.simulator.sample_trace import BATCH, CHAT, keys_of, problems_of, raw_trace, sample_trace

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
    raw = raw_trace(deployments=chat, jobs=[BATCH], variants=[{"name": "v", **variant}])
    problems = problems_of(raw)
    assert keys_of(problems) == [key]
    assert says in problems[0]


def test_a_variant_whose_pool_cannot_hold_a_group_the_stack_holds_names_the_variant():
    """8 vCPUs fit g5-shared's g5.2xlarge and g5.4xlarge; the variant keeps only g5.xlarge (4 vCPUs)."""
    job = {**BATCH, "cpu": "8"}
    assert problems_of(raw_trace(deployments=[], jobs=[job])) == []
    raw = raw_trace(
        deployments=[],
        jobs=[job],
        variants=[{"name": "small", "pools": {"g5-shared": {"instanceTypes": ["g5.xlarge"]}}}],
    )
    [problem] = problems_of(raw)
    assert problem.startswith("jobs[0].cpu: in variant small: 8000m is more than any node of the pool offers")


def test_valid_variants_of_each_kind_pass():
    raw = raw_trace(
        deployments=[CHAT],
        jobs=[BATCH],
        variants=[
            {"name": "a", "pools": {"g4dn-shared": {"disruption": {"consolidationPolicy": "WhenEmpty"}}}},
            {"name": "b", "teams": {"ml-research": {"pools": ["g5-shared"]}}},
            {"name": "c", "pools": {"g5-shared": {"instanceTypes": ["g5.12xlarge"]}}},
        ],
    )
    assert problems_of(raw) == []


def test_a_variant_changes_only_what_it_names():
    config = raw_stack("dev")
    variant = sample_trace(
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

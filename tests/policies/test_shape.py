"""A malformed stack is refused with one line naming the field, never a crash, whatever field is misshapen."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

import pytest

from policies.gpushare_policies.shape import MalformedStack
from tests.conftest import PLAN_DATE
from tests.tools.test_check import run_check, write_plan
from tools.check import check, policy_config_for


def _paths(node: Any, prefix: tuple[str | int, ...] = ()) -> Iterator[tuple[str | int, ...]]:
    if prefix:
        yield prefix
    if isinstance(node, dict):
        for key, value in node.items():
            yield from _paths(value, (*prefix, key))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from _paths(value, (*prefix, index))


def _wrong(value: Any) -> Any:
    """A value of another JSON type: containers become strings, scalars become lists."""
    return "x" if isinstance(value, (dict, list)) else []


def _refusals_of_wrong_types(plan: dict[str, Any], stack: str, indexes: list[int]) -> int:
    """Each input field of the resources at `indexes`, one at a time, replaced by a wrong type: findings or one line
    of MalformedStack, nothing else; how many were refused. Only the broken resource is copied: the pack never changes
    what it reads, which the end checks."""
    resources = plan["resources"]
    untouched = copy.deepcopy(resources)
    config, _ = policy_config_for(stack, None)
    refused = 0
    for index in indexes:
        for path in _paths(resources[index]["inputs"]):
            mutated = list(resources)
            mutated[index] = copy.deepcopy(resources[index])
            parent = mutated[index]["inputs"]
            for step in path[:-1]:
                parent = parent[step]
            parent[path[-1]] = _wrong(parent[path[-1]])
            try:
                check(mutated, config, PLAN_DATE)
            except MalformedStack as error:
                refused += 1
                assert "\n" not in str(error)
    assert resources == untouched
    return refused


def test_every_node_of_the_dev_plan_replaced_by_a_wrong_type(plans):
    refused = _refusals_of_wrong_types(plans["dev"], "dev", list(range(len(plans["dev"]["resources"]))))
    assert refused > 100  # the shapes cover what the rules read, not nothing


def test_the_refusal_names_resource_path_and_expectation(plans, tmp_path):
    def break_requirements(resources: list[dict[str, Any]]) -> None:
        pool = next(r for r in resources if r["type"].endswith(":NodePool"))
        pool["inputs"]["spec"]["template"]["spec"]["requirements"] = "g5.xlarge"

    completed = run_check("--plan", write_plan(tmp_path, plans["dev"], break_requirements))
    assert completed.returncode == 2
    assert "Traceback" not in completed.stderr and completed.stderr.count("\n") == 1
    assert (
        "NodePool g4dn-shared: spec.template.spec.requirements is str 'g5.xlarge'; expected a list" in completed.stderr
    )


@pytest.mark.parametrize(
    ("path", "value", "fragment"),
    [
        (("spec", "capacity"), ["40"], "spec.capacity is list"),
        (("spec", "weight"), "ten", "spec.weight is str 'ten'; expected a number"),
        (
            ("metadata", "labels"),
            {"gpushare.io/pool": 7},
            "metadata.labels.gpushare.io/pool is int 7; expected a string",
        ),
    ],
)
def test_overlay_fields(plans, path, value, fragment):
    resources = copy.deepcopy(plans["dev"]["resources"])
    overlay = next(r for r in resources if r["type"].endswith(":NodeOverlay"))
    overlay["inputs"][path[0]][path[1]] = value
    with pytest.raises(MalformedStack, match="NodeOverlay") as caught:
        check(resources, policy_config_for("dev", None)[0], PLAN_DATE)
    assert fragment in str(caught.value)


def test_every_node_of_the_prod_warm_headroom_replaced_by_a_wrong_type(plans):
    """dev keeps no headroom: prod's PodTemplate and CapacityBuffer, field by field."""
    resources = plans["prod"]["resources"]
    headroom = [i for i, r in enumerate(resources) if r["type"].endswith((":PodTemplate", ":CapacityBuffer"))]
    assert len(headroom) == 2
    assert _refusals_of_wrong_types(plans["prod"], "prod", headroom) > 10

"""Every physical AWS name the stack sets fits its AWS limit at the longest cluster name config accepts."""

from __future__ import annotations

import re

import pytest

from gpushare.aws_names import LIMITS, physical_names
from gpushare.config import ClusterConfig, PoolConfig
from gpushare.render.iam import INTERRUPTION_EVENTS
from gpushare.render.karpenter import node_pool_delete_timeout

NAME_PATTERN = ClusterConfig.model_fields["name"].metadata[0].pattern


def _longest_accepted_name() -> str:
    """Grow a name until the config's own pattern refuses it: the limit test follows the pattern."""
    name = "a"
    while re.fullmatch(NAME_PATTERN, name + "a"):
        name += "a"
    return name


def test_the_longest_name_is_what_the_pattern_allows() -> None:
    assert len(_longest_accepted_name()) == 32


@pytest.mark.parametrize("kind", sorted(LIMITS))
def test_names_fit_their_limit_at_the_longest_cluster_name(kind: str) -> None:
    names = physical_names(_longest_accepted_name(), list(INTERRUPTION_EVENTS))[kind]
    assert names
    too_long = [name for name in names if len(name) > LIMITS[kind]]
    assert too_long == []


def test_names_are_unique_per_kind() -> None:
    for kind, names in physical_names("c", list(INTERRUPTION_EVENTS)).items():
        assert len(set(names)) == len(names), kind


@pytest.mark.parametrize(("grace", "timeout"), [("1h", "75m"), ("90m", "105m"), ("2h30m", "165m"), ("45s", "15m")])
def test_nodepool_delete_waits_for_the_grace_period(grace: str, timeout: str) -> None:
    pool = PoolConfig.model_validate(
        {"name": "p", "instanceTypes": ["g5.xlarge"], "maxGpus": 1, "disruption": {"terminationGracePeriod": grace}}
    )
    assert node_pool_delete_timeout(pool) == timeout

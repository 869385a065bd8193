"""The rig's invariant checker on hand-made annotations: a healthy cluster passes every check, and each way an
invariant can break is found, as what it is (at once, or only once it outlasts its settle time)."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import pytest

from e2e.cluster import invariants
from e2e.cluster.invariants import (
    HAMI_DEVICES,
    HAMI_NODE,
    HAMI_REGISTER,
    SETTLE_S,
    Hami,
    Invariants,
    Snapshot,
    check,
    hami_quota_charges,
    registered_gpus,
)
from gpushare import names

HAMI = Hami("hami-scheduler", (names.GPU, names.GPU_MEMORY, names.GPU_CORES), names.GPU_MEMORY, names.GPU_CORES)
GPU_MEMORY = 15360


def _node(name: str = "n1", gpus: int = 1, pool: str = "p1") -> dict[str, Any]:
    register = [
        {"id": f"GPU-{name}-{i}", "index": i, "count": 10, "devmem": GPU_MEMORY, "devcore": 100, "health": True}
        for i in range(gpus)
    ]
    return {
        "metadata": {
            "name": name,
            "labels": {names.NODEPOOL_LABEL: pool},
            "annotations": {HAMI_REGISTER: json.dumps(register)},
        }
    }


def _pod(
    name: str,
    node: str | None = "n1",
    devices: str | None = "GPU-n1-0,NVIDIA,4096,25:;",
    phase: str = "Running",
    namespace: str = "team",
    scheduler: str = "hami-scheduler",
) -> dict[str, Any]:
    annotations = {}
    if devices is not None:
        annotations = {HAMI_NODE: node or "", HAMI_DEVICES: devices}
    limits = {names.GPU: "1", names.GPU_MEMORY: "4096", names.GPU_CORES: "25"}
    return {
        "metadata": {"name": name, "namespace": namespace, "annotations": annotations},
        "spec": {
            "schedulerName": scheduler,
            "containers": [{"name": "c", "resources": {"limits": limits, "requests": dict(limits)}}],
            **({"nodeName": node} if node else {}),
        },
        "status": {"phase": phase},
    }


def _quota(used_gpus: str = "2", hard_gpus: str = "4", namespace: str = "team") -> dict[str, Any]:
    hard = {f"requests.{names.GPU}": hard_gpus, f"requests.{names.GPU_MEMORY}": "30720"}
    used = {f"requests.{names.GPU}": used_gpus, f"requests.{names.GPU_MEMORY}": str(4096 * int(used_gpus))}
    return {
        "metadata": {"name": "gpu", "namespace": namespace},
        "spec": {"hard": hard},
        "status": {"hard": hard, "used": used},
    }


def _claim(name: str = "c1", node: str | None = "n1", pool: str = "p1") -> dict[str, Any]:
    return {
        "metadata": {"name": name, "labels": {names.NODEPOOL_LABEL: pool}},
        "status": {"nodeName": node} if node else {},
    }


def _healthy(**changes: Any) -> Snapshot:
    snapshot = Snapshot(
        nodes=[_node()],
        pods=[_pod("a"), _pod("b", devices="GPU-n1-0,NVIDIA,4096,25:;")],
        claims=[_claim()],
        quotas=[_quota()],
        hami_quota={"team": {names.GPU_MEMORY: (8192.0, 30720.0), names.GPU_CORES: (50.0, 200.0)}},
    )
    for key, value in changes.items():
        setattr(snapshot, key, value)
    return snapshot


def _kinds(snapshot: Snapshot) -> list[str]:
    return sorted(finding.kind for finding in check(snapshot, HAMI)[1])


def test_a_healthy_cluster_passes_every_check_and_the_checks_are_counted() -> None:
    checks, findings = check(_healthy(), HAMI)
    assert findings == []
    assert checks == {
        "gpu-registered": 2,
        "gpu-booking": 1,
        "placement": 2,
        "quota-limit": 2,
        "quota": 2,
        "hami-quota-limit": 2,
        "hami-quota": 2,
        "nodeclaim": 2,
        "nodeclaim-unique": 1,
        "orphan-pod": 2,
    }


def test_finished_and_deleting_pods_hold_nothing_but_hamis_charge_until_a_deleting_pod_is_gone() -> None:
    done = _pod("done", phase="Succeeded", devices="GPU-n1-0,NVIDIA,15360,100:;")
    going = _pod("going", devices="GPU-n1-0,NVIDIA,15360,100:;")
    going["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    assert _kinds(_healthy(pods=[*_healthy().pods, done])) == []
    findings = check(_healthy(pods=[*_healthy().pods, done, going]), HAMI)[1]
    assert [f.kind for f in findings] == ["hami-quota", "hami-quota"]
    assert "HAMi charges team nvidia.com/gpumem 8192, its pods hold 23552" in findings[0].message
    charge = {"team": {names.GPU_MEMORY: (8192.0 + 15360, 30720.0), names.GPU_CORES: (150.0, 200.0)}}
    assert _kinds(_healthy(pods=[*_healthy().pods, done, going], hami_quota=charge)) == []


@pytest.mark.parametrize(
    ("extra", "broken"),
    [
        ("GPU-n1-0,NVIDIA,8000,10:;", "memory 16192 of 15360"),
        ("GPU-n1-0,NVIDIA,100,60:;", "cores 110 of 100"),
    ],
)
def test_a_gpu_holding_more_memory_or_cores_than_it_registers_is_over_booked(extra: str, broken: str) -> None:
    findings = check(_healthy(pods=[*_healthy().pods, _pod("c", devices=extra)]), HAMI)[1]
    assert [f.kind for f in findings if f.kind == "gpu-booking"] == ["gpu-booking"]
    assert broken in findings[0].message and findings[0].pool == "p1" and not findings[0].lags


def test_a_gpu_handed_out_to_more_pods_than_its_split_count_is_over_booked() -> None:
    pods = [_pod(f"p{i}", devices="GPU-n1-0,NVIDIA,100,1:;") for i in range(11)]
    findings = check(_healthy(pods=pods, quotas=[], hami_quota=None), HAMI)[1]
    assert [f.kind for f in findings] == ["gpu-booking"] and "11 pods of a split of 10" in findings[0].message


def test_an_allocation_on_a_gpu_the_node_does_not_register_is_found() -> None:
    pods = [*_healthy().pods, _pod("c", devices="GPU-n1-7,NVIDIA,1024,10:;")]
    assert "gpu-registered" in _kinds(_healthy(pods=pods, quotas=[], hami_quota=None))


def test_a_pod_on_a_hami_node_that_hami_did_not_place_is_found_at_once() -> None:
    bypassed = _pod("c", devices=None, scheduler="default-scheduler")
    [finding] = [f for f in check(_healthy(pods=[*_healthy().pods, bypassed]), HAMI)[1] if f.kind == "placement"]
    assert "default-scheduler" in finding.message and finding.namespace == "team" and not finding.lags


def test_a_resourcequota_charge_unlike_the_live_pods_is_a_lag() -> None:
    findings = check(_healthy(quotas=[_quota(used_gpus="3")]), HAMI)[1]
    assert {f.kind for f in findings} == {"quota"} and all(f.lags for f in findings)


def test_a_pods_charge_is_its_largest_init_container_when_that_asks_more() -> None:
    pods = _healthy().pods
    pods[0]["spec"]["initContainers"] = [{"name": "warm", "resources": {"limits": {names.GPU: "2"}}}]
    assert _kinds(_healthy(pods=pods)) == ["quota"]
    quota = _quota()
    quota["status"]["used"][f"requests.{names.GPU}"] = "3"
    assert _kinds(_healthy(pods=pods, quotas=[quota])) == []


def test_a_resourcequota_charge_over_its_hard_limit_is_found_at_once() -> None:
    findings = check(_healthy(quotas=[_quota(used_gpus="2", hard_gpus="1")]), HAMI)[1]
    assert [f.kind for f in findings] == ["quota-limit"] and not findings[0].lags


def test_hamis_charge_unlike_what_it_allocated_is_a_lag() -> None:
    charge = {"team": {names.GPU_MEMORY: (12288.0, 30720.0), names.GPU_CORES: (50.0, 200.0)}}
    findings = check(_healthy(hami_quota=charge), HAMI)[1]
    assert [f.kind for f in findings] == ["hami-quota"] and "8192" in findings[0].message


def test_hamis_charge_over_its_limit_counts_the_limit_in_units_of_memory_factor() -> None:
    charge = {"team": {names.GPU_MEMORY: (8192.0, 4096.0), names.GPU_CORES: (50.0, 200.0)}}
    assert _kinds(_healthy(hami_quota=charge)) == ["hami-quota-limit"]
    assert check(_healthy(hami_quota=charge), replace(HAMI, memory_factor=2))[1] == []


def test_hamis_charge_is_not_judged_while_its_metrics_cannot_be_read() -> None:
    checks, findings = check(_healthy(hami_quota=None), HAMI)
    assert "hami-quota" not in checks and findings == []


def test_a_nodeclaim_whose_node_is_gone_and_a_karpenter_node_without_a_claim_are_lags() -> None:
    gone = check(_healthy(claims=[_claim(), _claim("c2", node="n9")]), HAMI)[1]
    assert [(f.kind, f.subject, f.lags) for f in gone] == [("nodeclaim", "c2", True)]
    unclaimed = check(_healthy(nodes=[_node(), _node("n2", pool="p2")]), HAMI)[1]
    assert [(f.kind, f.subject, f.pool) for f in unclaimed] == [("nodeclaim", "n2", "p2")]


def test_a_node_claimed_twice_is_found_at_once() -> None:
    findings = check(_healthy(claims=[_claim(), _claim("c2")]), HAMI)[1]
    assert [(f.kind, f.lags) for f in findings] == [("nodeclaim-unique", False)]


def test_a_pod_bound_to_a_node_that_is_gone_is_a_lag_and_its_allocation_is_not_over_booking() -> None:
    findings = check(_healthy(nodes=[], claims=[], quotas=[], hami_quota=None), HAMI)[1]
    assert {(f.kind, f.lags) for f in findings} == {("orphan-pod", True)}


def test_hamis_older_comma_registration_and_its_quota_metrics_are_read() -> None:
    node = {
        "metadata": {"name": "n1", "annotations": {HAMI_REGISTER: "GPU-a,10,15360,100,NVIDIA-T4,0,true,1,hami-core:"}}
    }
    [gpu] = registered_gpus(node)
    assert (gpu.uuid, gpu.count, gpu.memory, gpu.cores, gpu.index) == ("GPU-a", 10, 15360, 100, 1)
    metrics = (
        "# HELP hami_resource_quota_used resourcequota usage\n"
        'hami_resource_quota_used{limit="30720",namespace="team",quota_name="nvidia.com/gpumem"} 8192\n'
        'hami_resource_quota_limit{namespace="team",quota_name="nvidia.com/gpumem"} 30720\n'
    )
    assert hami_quota_charges(metrics) == {"team": {"nvidia.com/gpumem": (8192.0, 30720.0)}}


class FakeChecker(Invariants):
    def __init__(self, snapshots: list[Snapshot]) -> None:
        super().__init__(None, HAMI)  # type: ignore[arg-type]
        self.snapshots = snapshots

    def read(self) -> Snapshot | None:
        return self.snapshots.pop(0)


def test_a_lag_fails_only_once_it_outlasts_its_settle_time_and_each_failure_is_reported_once(monkeypatch) -> None:
    clock = [100.0]
    monkeypatch.setattr(invariants.time, "monotonic", lambda: clock[0])
    lagging = _healthy(quotas=[_quota(used_gpus="3")])
    over = _healthy(pods=[*_healthy().pods, _pod("c", devices="GPU-n1-0,NVIDIA,8000,10:;")])
    checker = FakeChecker([lagging, lagging, _healthy(), lagging, lagging, over, over])
    mark = checker.mark()
    checker.sample()
    clock[0] += SETTLE_S["quota"] - 1
    checker.sample()
    assert checker.tally.failed == [] and not checker.clean()
    checker.sample()  # the cluster caught up: the next lag starts its own clock
    assert checker.clean()
    checker.sample()
    clock[0] += SETTLE_S["quota"]
    checker.sample()
    assert [f.kind for f in checker.tally.failed] == ["quota", "quota"]
    checker.sample()
    checker.sample()
    assert [f.kind for f in checker.tally.failed].count("gpu-booking") == 1
    seen = checker.since(mark, lambda finding: finding.kind == "gpu-booking")
    assert seen.samples == 7 and [f.kind for f in seen.failed] == ["gpu-booking"]

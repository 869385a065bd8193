"""make try's report from what a run saw (no cluster): pods traced to their workloads through their controllers,
HAMi's allocation read per GPU, refusals worded, the nodes priced."""

from __future__ import annotations

import json

from e2e.cluster.kubectl import KubectlError
from e2e.cluster.stack import rig_nodepool_name
from e2e.tryout import report
from e2e.tryout.manifests import read_manifests
from e2e.tryout.reasons import team_view
from e2e.tryout.run import Seen, expected_pods, server_message, workload_of
from gpushare import names
from gpushare.catalog import load_catalog
from tests.conftest import ROOT

NODE = "kwok-node-a"


def _end(manifests):
    """A cluster where llm-server-2 runs on a g5.xlarge, h100-only is pending and dashboards' ninth pod was refused."""
    rs = {
        "metadata": {
            "name": "llm-server-2-abc",
            "uid": "rs1",
            "ownerReferences": [{"kind": "Deployment", "name": "llm-server-2", "controller": True, "uid": "d1"}],
        }
    }
    dash_rs = {
        "metadata": {
            "name": "dashboards-xyz",
            "uid": "rs2",
            "ownerReferences": [{"kind": "Deployment", "name": "dashboards", "controller": True, "uid": "d2"}],
        }
    }
    running = {
        "metadata": {
            "name": "llm-server-2-abc-1",
            "uid": "p1",
            "ownerReferences": [{"kind": "ReplicaSet", "name": "llm-server-2-abc", "uid": "rs1", "controller": True}],
            "annotations": {
                "hami.io/vgpu-devices-allocated": "GPU-1,NVIDIA,23028,0:;",
                "hami.io/bind-phase": "success",
            },
        },
        "spec": {"nodeName": NODE},
        "status": {"phase": "Running"},
    }
    waiting = {
        "metadata": {"name": "h100-only", "uid": "p2", "annotations": {"nvidia.com/use-gputype": "H100"}},
        "spec": {
            "nodeSelector": {names.POOL_LABEL: "g5-shared"},
            "containers": [{"name": "m", "resources": {"limits": {names.GPU: "1", names.GPU_MEMORY: "8000"}}}],
        },
        "status": {
            "phase": "Pending",
            "conditions": [
                {
                    "type": "PodScheduled",
                    "status": "False",
                    "message": "0/1 nodes are available: 1 1/1 CardTypeMismatch.",
                }
            ],
        },
    }
    refused = {
        "reason": "FailedCreate",
        "involvedObject": {"kind": "ReplicaSet", "name": "dashboards-xyz", "uid": "rs2"},
        "message": 'Error creating: pods "dashboards-xyz-9" is forbidden: exceeded quota: ml-research-gpu, '
        "requested: requests.nvidia.com/gpu.shared=1, used: requests.nvidia.com/gpu.shared=8, "
        "limited: requests.nvidia.com/gpu.shared=8",
    }
    node = {
        "metadata": {
            "name": NODE,
            "labels": {names.POOL_LABEL: "g5-shared", "node.kubernetes.io/instance-type": "g5.xlarge"},
            "annotations": {"hami.io/node-nvidia-register": json.dumps([{"id": "GPU-1", "index": 2}])},
        }
    }
    claim = {"metadata": {"name": "ptx-abcde"}, "status": {"nodeName": NODE}}
    again = refused | {
        "message": "(combined from similar events): " + refused["message"].replace("-9", "-10"),
        "count": 3,
    }
    return {"Pod": [running, waiting], "ReplicaSet": [rs, dash_rs], "Job": [], "Event": [refused, again],
            "Node": [node],
            "NodeClaim": [claim], "StatefulSet": []}  # fmt: skip


def test_the_report_traces_pods_words_refusals_and_prices_nodes(dev):
    manifests = read_manifests(ROOT / "examples" / "try", "ml-research")
    refusal = 'pods "notebook" is forbidden: ... a pod asking GPUs must select its pool, one of team ml-research\'s'
    seen = Seen(
        admission={w.source: (refusal if w.name == "notebook" else None) for w in manifests.workloads},
        placed_at={"p1": 21.4},
        claims={"ptx-abcde": {"type": "g5.xlarge", "nodepool": rig_nodepool_name("g5-shared"), "node": NODE}},
        seconds=80.0,
    )
    team = team_view(dev, load_catalog(), "ml-research")
    identity = {"manifests": "examples/try", "stack": "dev", "commit": "abc", "seconds_startup": 50.0}
    doc = report.document(manifests, seen, _end(manifests), team, load_catalog(), identity)
    by_name = {w["applied_as"]: w for w in doc["workloads"]}
    [pod] = by_name["llm-server-2"]["pods"]
    assert pod | {"hami": None} == {
        "name": "llm-server-2-abc-1", "state": "running", "pool": "g5-shared", "node_type": "g5.xlarge",
        "nodeclaim": "ptx-abcde", "node": NODE, "hami": None, "seconds_to_placed": 21.4,
    }  # fmt: skip
    assert pod["hami"] == [{"gpu_index": 2, "uuid": "GPU-1", "type": "NVIDIA", "memory": 23028, "cores": 0}]
    assert by_name["llm-server-2"]["name"] == "llm-server"
    assert by_name["llm-server"]["namespace_written"] == "default"
    assert by_name["notebook"]["admission"] == "refused" and by_name["notebook"]["class"] == "no-pool"
    [waiting] = by_name["h100-only"]["pods"]
    assert (waiting["state"], waiting["class"]) == ("pending", "gpu-type")
    [quota] = by_name["dashboards"]["pods_refused"]
    assert quota["class"] == "quota" and quota["message"].startswith('pods "dashboards-xyz-9" is forbidden')
    assert quota["times"] == 4, "one cause, whatever pod name it was refused for"
    assert (by_name["dashboards"]["admission"], by_name["llm-server-2"]["admission"]) == ("pods refused", "admitted")
    assert doc["nodes"][0]["pool"] == "g5-shared", "the stack's pool name, not the rig's short NodePool name"
    assert doc["usd_per_hour_at_end"] == load_catalog().instance_type("g5.xlarge").on_demand_usd_per_hour
    table = report.terminal(doc)
    assert "examples/try/never-runs.yaml#5 notebook: refused: selects no pool" in table
    assert "whole-gpu-deployment.yaml#2 Service/llm-server: a Service is not a workload make try judges" in table
    markdown = report.markdown(doc)
    assert (
        "Renamed from `llm-server`" in markdown and "Its namespace `default` was replaced by `ml-research`" in markdown
    )


def test_pods_belong_to_their_workload_through_replicasets_and_jobs():
    chain = {"rs1": ("Deployment", "web"), "job1": ("CronJob", "nightly")}
    owned = {
        "metadata": {
            "name": "x",
            "ownerReferences": [{"kind": "ReplicaSet", "uid": "rs1", "name": "web-1", "controller": True}],
        }
    }
    assert workload_of(owned, chain) == ("Deployment", "web")
    assert workload_of({"metadata": {"name": "bare"}}, chain) == ("Pod", "bare")
    stateful = {
        "metadata": {
            "name": "nb-0",
            "ownerReferences": [{"kind": "StatefulSet", "uid": "s", "name": "nb", "controller": True}],
        }
    }
    assert workload_of(stateful, chain) == ("StatefulSet", "nb")


def test_pods_asked_per_kind_and_the_api_servers_own_words():
    manifests = read_manifests(ROOT / "examples" / "try", "ml-research")
    asked = {w.name: expected_pods(w) for w in manifests.workloads}
    assert (asked["t4-workers"], asked["embed-batch"], asked["nightly-eval"], asked["h100-only"]) == (9, 2, 1, 1)
    wrapped = KubectlError('Error from server (Forbidden): error when creating "STDIN": pods "p" is forbidden: x')
    assert server_message(wrapped) == 'pods "p" is forbidden: x'


def test_a_jobs_pod_done_on_a_node_consolidated_since_is_still_reported(dev):
    """The pod garbage collector deletes a pod whose node is gone: the run keeps the pods it saw done."""
    manifests = read_manifests(ROOT / "examples" / "try", "ml-research")
    job = {"metadata": {"name": "embed-batch", "uid": "j1", "ownerReferences": []}}
    done = {
        "metadata": {"name": "embed-batch-a", "uid": "p9", "annotations": {},
                     "ownerReferences": [{"kind": "Job", "name": "embed-batch", "uid": "j1", "controller": True}]},
        "spec": {"nodeName": "gone"}, "status": {"phase": "Succeeded"},
    }  # fmt: skip
    gone = {"metadata": {"name": "gone", "labels": {names.POOL_LABEL: "g5-shared"}, "annotations": {}}}
    seen = Seen(admission={w.source: None for w in manifests.workloads}, finished={"p9": done})
    seen.finished_nodes["gone"] = gone
    end = {"Pod": [], "ReplicaSet": [], "Job": [job], "Event": [], "Node": [], "NodeClaim": [], "StatefulSet": []}
    team = team_view(dev, load_catalog(), "ml-research")
    identity = {"manifests": "examples/try", "stack": "dev", "commit": "abc", "seconds_startup": 50.0}
    doc = report.document(manifests, seen, end, team, load_catalog(), identity)
    [embed] = [w for w in doc["workloads"] if w["applied_as"] == "embed-batch"]
    assert [(p["name"], p["state"], p["pool"]) for p in embed["pods"]] == [("embed-batch-a", "done", "g5-shared")]

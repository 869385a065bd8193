"""Plays, on every fake GPU node, the parts a real node's kubelet and device plugins play.

- kubelet: a new node registers its extended resources as 0 until a device plugin reports them, so the
  agent zeroes them, then marks the node for KWOK (which plays the kubelet's status from then on).
- HAMi pools: once the node is Ready, start its rig-gpu-node (`start_hami_node`): a kubelet stand-in that
  speaks the device-plugin gRPC API, a stand-in for HAMi's own device plugin, and the real mock device
  plugin, which register through it.
- The NVIDIA device plugin (nodes its nodeSelector admits: exclusive and time-sliced pools): once the node is
  Ready, register what `e2e.cluster.device_plugins` derives from the release's values and the GPU.
- KWOK's own race: a pod bound to a node KWOK has only just learned can go unplayed until KWOK's resync, minutes
  later (seen as a time-sliced pod bound but not Running for 350 s). A pod bound to a KWOK node and still without a
  pod IP after KWOK_NUDGE_S gets an annotation touched, whose update event KWOK plays: a kubelet would have started
  it, or, when it is being deleted, stopped it and let the API server remove it (an unplayed pod left terminating
  keeps HAMi's quota charge, which HAMi holds until a pod is gone). Nothing of the pod's spec changes.
A pool listed in `unplugged_pools` gets no device plugin: the ResourceNotRegistered failure.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from e2e.cluster.api import Api, ApiError
from e2e.cluster.device_plugins import NvidiaPluginConfig
from e2e.cluster.errors import RigError
from e2e.cluster.rig import KUBELET_STARTED
from gpushare import names
from gpushare.catalog import Catalog, InstanceType

KWOK_NODE_ANNOTATION = ("kwok.x-k8s.io/node", "fake")
# Nodes a scenario creates itself for another stack than the running one carry that stack's name: their device
# plugins read that stack's HAMi device config.
RIG_STACK_LABEL = "rig.gpushare.io/stack"
NVIDIA_REGISTERED_ANNOTATION = "rig.gpushare.io/nvidia-device-plugin"
# A bound pod KWOK has not played after this long is touched (see the module's docstring), and again as often.
KWOK_NUDGE_S = 15.0
KWOK_NUDGE_ANNOTATION = "rig.gpushare.io/kwok-nudged"


def _ready(node: dict[str, Any]) -> bool:
    conditions = node.get("status", {}).get("conditions", [])
    return any(c["type"] == "Ready" and c["status"] == "True" for c in conditions)


def _kwok_managed(node: dict[str, Any]) -> bool:
    return node["metadata"].get("annotations", {}).get(KWOK_NODE_ANNOTATION[0]) == KWOK_NODE_ANNOTATION[1]


class NodeAgent(threading.Thread):
    def __init__(
        self,
        api: Api,
        catalog: Catalog,
        zeroed: tuple[str, ...],
        start_hami_node: Callable[[str, InstanceType, dict[str, str]], None],
        nvidia: NvidiaPluginConfig | None,
    ) -> None:
        super().__init__(name="node-agent", daemon=True)
        self.api = api
        self.catalog = catalog
        self.zeroed = zeroed
        self.start_hami_node = start_hami_node
        self.nvidia = nvidia
        self.unplugged_pools: set[str] = set()
        self.hami_nodes: set[str] = set()
        self.failure: Exception | None = None
        self._stop_requested = threading.Event()
        # Pod uid -> when this agent first saw it bound but unplayed, and when it last touched it.
        self._unplayed_since: dict[str, float] = {}
        self._last_pod_scan = 0.0

    def stop(self) -> None:
        self._stop_requested.set()
        self.join(timeout=10)

    def run(self) -> None:
        while not self._stop_requested.wait(0.5):
            try:
                nodes = self.api.items("/api/v1/nodes")
                # A deleted node's rig-gpu-node exits by itself; forget it.
                self.hami_nodes &= {node["metadata"]["name"] for node in nodes}
                for node in nodes:
                    self._tend(node)
                self._nudge_unplayed_pods({n["metadata"]["name"] for n in nodes if _kwok_managed(n)})
            except ApiError as error:
                if error.status != 409 and error.status != 404:  # node changed or went meanwhile: next round
                    self.failure = error
                    return
            except RigError as error:
                if self.api.ready():  # the API server answers: the failure is the agent's
                    self.failure = error
                    return
                # The API server is away (restarted, as a fault scenario does): the next round tries again.

    def _nudge_unplayed_pods(self, kwok_nodes: set[str]) -> None:
        """Touch the pods KWOK left bound but unplayed for KWOK_NUDGE_S (the module's docstring says why)."""
        now = time.monotonic()
        if now - self._last_pod_scan < KWOK_NUDGE_S / 3:
            return
        self._last_pod_scan = now
        unplayed = {}
        for pod in self.api.items("/api/v1/pods?fieldSelector=status.phase%3DPending"):
            metadata, spec, status = pod["metadata"], pod["spec"], pod.get("status", {})
            if spec.get("nodeName") in kwok_nodes and "podIP" not in status:
                uid = metadata["uid"]
                unplayed[uid] = since = self._unplayed_since.get(uid, now)
                if now - since >= KWOK_NUDGE_S:
                    path = f"/api/v1/namespaces/{metadata['namespace']}/pods/{metadata['name']}"
                    self.api.merge_patch(path, {"metadata": {"annotations": {KWOK_NUDGE_ANNOTATION: str(int(now))}}})
                    unplayed[uid] = now
        self._unplayed_since = unplayed

    def _patch_status(self, name: str, resources: dict[str, int]) -> None:
        amounts = {resource: str(amount) for resource, amount in resources.items()}
        self.api.merge_patch(f"/api/v1/nodes/{name}/status", {"status": {"capacity": amounts, "allocatable": amounts}})

    def _annotate(self, name: str, annotations: dict[str, str]) -> None:
        self.api.merge_patch(f"/api/v1/nodes/{name}", {"metadata": {"annotations": annotations}})

    def _tend(self, node: dict[str, Any]) -> None:
        metadata = node["metadata"]
        annotations = metadata.get("annotations", {})
        if not _kwok_managed(node):
            return
        name = metadata["name"]
        labels = metadata.get("labels", {})
        if KUBELET_STARTED[0] not in annotations:
            self._patch_status(name, dict.fromkeys(self.zeroed, 0))
            self._annotate(name, {KUBELET_STARTED[0]: KUBELET_STARTED[1]})
            return
        if not _ready(node) or labels.get(names.POOL_LABEL) in self.unplugged_pools:
            return
        if names.INSTANCE_TYPE_LABEL not in labels:  # no instance's node (the engine phase's system node): no GPU
            return
        sharing = labels.get(names.SHARING_LABEL)
        itype = self.catalog.instance_type(labels[names.INSTANCE_TYPE_LABEL])
        if sharing == names.SHARING_HAMI and name not in self.hami_nodes:
            self.hami_nodes.add(name)
            self.start_hami_node(name, itype, labels)
        elif (
            self.nvidia is not None and self.nvidia.runs_on(labels) and NVIDIA_REGISTERED_ANNOTATION not in annotations
        ):
            self._patch_status(name, self.nvidia.register(labels, itype.gpu_count))
            self._annotate(name, {NVIDIA_REGISTERED_ANNOTATION: "registered"})

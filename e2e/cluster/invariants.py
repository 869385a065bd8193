"""The rig's one invariant checker: what must hold on the cluster at every moment, whatever fails.

It reads the cluster (nodes, pods, NodeClaims, ResourceQuotas, and HAMi's own quota charge from its metrics) and
judges, per sample:
- **per GPU** (HAMi's node registration, `hami.io/node-nvidia-register`, against the allocations HAMi's pod
  annotations record, `hami.io/vgpu-devices-allocated` on pods HAMi assigned to that node): the memory and cores
  handed out within what the GPU registers, and no more pods on it than its split count; an allocation on a GPU
  the node does not register;
- **placement**: a pod bound to a HAMi node that asks HAMi's resources but was not placed there by HAMi (its
  webhook failed open and another scheduler bound it: the kubelet would refuse to start it);
- **quota**: each team's ResourceQuota `used` and what its live pods request within `hard`, and `used` equal to
  what they request; HAMi's own charge (`hami_resource_quota_used`) within its limit and equal to what HAMi
  allocated to the namespace's live pods;
- **NodeClaims against nodes**: no node claimed twice, no NodeClaim whose node is gone, no Karpenter node without
  its NodeClaim;
- **pods on nodes that no longer exist**.

What is true at every moment (an over-booked GPU, a charge over a limit, a pod HAMi did not place) fails at once.
What the cluster repairs asynchronously (the quota controller's count, Karpenter's garbage collection, the pod
garbage collector) is a *lag*: it fails only when the same finding persists longer than its settle time. Checks
are counted per kind, so a report says how much was judged, not only that nothing failed.
"""

from __future__ import annotations

import json
import threading
import time
import urllib.request
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from e2e.cluster.api import Api, ApiError
from e2e.cluster.errors import RigError
from e2e.cluster.hami_values import HamiValues
from gpushare import names

# What HAMi's device plugin writes on a node, and its scheduler on a pod it placed (pkg/util/types.go).
HAMI_REGISTER = "hami.io/node-nvidia-register"
HAMI_NODE = "hami.io/vgpu-node"
HAMI_DEVICES = "hami.io/vgpu-devices-allocated"
# How often the background checker samples the cluster.
SAMPLE_S = 3.0
# How long a lagging finding may persist before it fails: HAMi's informer follows a pod within seconds; the quota
# controller usually too, but a full recount from its informer can overwrite an admission's newer charge (seen in
# make chaos: used 3 with 4 live pods for minutes), righted at the latest by its 5-minute resync and a margin; the pod
# garbage collector deletes pods of a gone node after its 40 s quarantine and 20 s period; Karpenter's NodeClaim
# garbage collection runs every 2 minutes.
SETTLE_S = {"quota": 330.0, "hami-quota": 60.0, "orphan-pod": 120.0, "nodeclaim": 240.0}
TERMINAL = ("Succeeded", "Failed")


@dataclass(frozen=True)
class Gpu:
    """One GPU as its node registers it for HAMi."""

    uuid: str
    node: str
    count: int
    memory: int
    cores: int
    index: int = 0


@dataclass(frozen=True)
class Finding:
    """A check that did not hold: its kind, what it is about (a stable key across samples) and what was seen."""

    kind: str
    subject: str
    message: str
    # Whose it is: the namespace of a pod or quota, the NodePool of a node, GPU or NodeClaim.
    namespace: str = ""
    pool: str = ""

    @property
    def lags(self) -> bool:
        return self.kind in SETTLE_S


@dataclass
class Snapshot:
    """What one sample read; `hami_quota` is HAMi's charge (namespace -> resource -> (used, limit)), None when its
    metrics could not be read (HAMi down)."""

    nodes: list[dict[str, Any]]
    pods: list[dict[str, Any]]
    claims: list[dict[str, Any]]
    quotas: list[dict[str, Any]]
    hami_quota: dict[str, dict[str, tuple[float, float]]] | None = None


@dataclass(frozen=True)
class Hami:
    """What the checker needs of the HAMi release: its resource names, scheduler name and memoryFactor."""

    scheduler_name: str
    resources: tuple[str, ...]
    memory_resource: str
    cores_resource: str
    memory_factor: int = 1


def registered_gpus(node: dict[str, Any]) -> list[Gpu]:
    """The GPUs a node registers for HAMi: the JSON its device plugin writes (MarshalNodeDevices, HAMi 2.10), or
    the older comma form `id,count,devmem,devcore,type,numa,health[,index,mode]:` per GPU."""
    name = node["metadata"]["name"]
    text = node["metadata"].get("annotations", {}).get(HAMI_REGISTER, "")
    if not text:
        return []
    if text.lstrip().startswith("["):
        return [
            Gpu(
                str(d["id"]),
                name,
                int(d.get("count", 0)),
                int(d.get("devmem", 0)),
                int(d.get("devcore", 0)),
                int(d.get("index", 0)),
            )
            for d in json.loads(text)
        ]
    gpus = []
    for part in text.split(":"):
        fields = part.split(",")
        if len(fields) >= 4:
            index = int(fields[7]) if len(fields) > 7 and fields[7] else 0
            gpus.append(Gpu(fields[0], name, int(fields[1]), int(fields[2]), int(fields[3]), index))
    return gpus


class Allocation(NamedTuple):
    """One GPU HAMi handed a container of a pod: its UUID, type, memory and cores."""

    uuid: str
    type: str
    memory: int
    cores: int


def allocations(pod: dict[str, Any]) -> list[Allocation]:
    """What HAMi handed each container of the pod (`UUID,type,mem,cores:` per GPU, `;` per container)."""
    text = pod["metadata"].get("annotations", {}).get(HAMI_DEVICES, "")
    found = []
    for container in text.split(";"):
        for device in container.split(":"):
            fields = device.split(",")
            if len(fields) >= 4 and fields[0]:
                found.append(Allocation(fields[0], fields[1], int(fields[2]), int(fields[3])))
    return found


def _live(pod: dict[str, Any]) -> bool:
    """A pod that holds what it was given: not finished, not being deleted."""
    return pod.get("status", {}).get("phase") not in TERMINAL and "deletionTimestamp" not in pod["metadata"]


def _quantity(text: str) -> float:
    """A Kubernetes quantity of an extended resource or a count (whole numbers, or with a binary/decimal suffix)."""
    suffixes = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "k": 1e3, "M": 1e6, "G": 1e9, "m": 1e-3}
    for suffix in sorted(suffixes, key=len, reverse=True):
        if text.endswith(suffix):
            return float(text[: -len(suffix)]) * suffixes[suffix]
    return float(text)


def _container_request(container: dict[str, Any], resource: str) -> float:
    """A container's request of `resource` (the API server defaults an extended resource's request from its
    limit)."""
    resources = container.get("resources", {})
    amount = resources.get("requests", {}).get(resource, resources.get("limits", {}).get(resource))
    return 0.0 if amount is None else _quantity(str(amount))


def _requests(pod: dict[str, Any], resource: str) -> float:
    """What a ResourceQuota charges the pod for `resource`: its containers' sum, or its largest init container's
    when that is more (init containers run one at a time, before the others)."""
    spec = pod["spec"]
    running = sum(_container_request(c, resource) for c in spec.get("containers", []))
    return max([running, *(_container_request(c, resource) for c in spec.get("initContainers", []))])


def _asks(pod: dict[str, Any], resources: Iterable[str]) -> bool:
    wanted = set(resources)
    return any(
        wanted & set(container.get("resources", {}).get(side, {}))
        for container in pod["spec"].get("containers", [])
        for side in ("limits", "requests")
    )


def check(snapshot: Snapshot, hami: Hami) -> tuple[Counter[str], list[Finding]]:
    """Every check of one sample: how many of each kind were made, and those that did not hold."""
    checks: Counter[str] = Counter()
    findings: list[Finding] = []
    nodes = {node["metadata"]["name"]: node for node in snapshot.nodes}
    gpus = {gpu.uuid: gpu for node in snapshot.nodes for gpu in registered_gpus(node)}
    live = [pod for pod in snapshot.pods if _live(pod)]
    _check_gpus(live, gpus, nodes, checks, findings)
    _check_placement(live, nodes, hami, checks, findings)
    _check_quotas(live, snapshot.quotas, checks, findings)
    if snapshot.hami_quota is not None:
        # HAMi keeps charging a pod being deleted until it is gone or has finished (onUpdatePod, HAMi 2.10).
        charged = [pod for pod in snapshot.pods if pod.get("status", {}).get("phase") not in TERMINAL]
        _check_hami_quota(charged, snapshot.hami_quota, hami, checks, findings)
    _check_claims(snapshot.claims, nodes, checks, findings)
    for pod in live:
        node = pod["spec"].get("nodeName")
        if node:
            checks["orphan-pod"] += 1
            if node not in nodes:
                message = f"pod {_name(pod)} is bound to node {node}, gone"
                findings.append(Finding("orphan-pod", _name(pod), message, namespace=pod["metadata"]["namespace"]))
    return checks, findings


def _name(obj: dict[str, Any]) -> str:
    metadata = obj["metadata"]
    return f"{metadata['namespace']}/{metadata['name']}" if metadata.get("namespace") else metadata["name"]


def _pool(node: dict[str, Any] | None) -> str:
    return "" if node is None else node["metadata"].get("labels", {}).get(names.NODEPOOL_LABEL, "")


def _check_gpus(
    live: list[dict[str, Any]],
    gpus: dict[str, Gpu],
    nodes: dict[str, dict[str, Any]],
    checks: Counter[str],
    found: list[Finding],
) -> None:
    """Per GPU what HAMi handed out; allocations on a node that is gone are the orphan check's (its pods go)."""
    memory: Counter[str] = Counter()
    cores: Counter[str] = Counter()
    holders: dict[str, set[str]] = {}
    for pod in live:
        node = pod["metadata"].get("annotations", {}).get(HAMI_NODE)
        if node not in nodes:
            continue
        for uuid, _type, mem, core in allocations(pod):
            gpu = gpus.get(uuid)
            checks["gpu-registered"] += 1
            if gpu is None or gpu.node != node:
                where = "no node" if gpu is None else f"node {gpu.node}"
                found.append(
                    Finding(
                        "gpu-registered",
                        f"{_name(pod)}/{uuid}",
                        f"pod {_name(pod)} holds GPU {uuid} on node {node}, which {where} registers",
                        namespace=pod["metadata"]["namespace"],
                    )
                )
                continue
            memory[uuid] += mem
            cores[uuid] += core
            holders.setdefault(uuid, set()).add(_name(pod))
    for uuid, gpu in gpus.items():
        checks["gpu-booking"] += 1
        over = []
        if memory[uuid] > gpu.memory:
            over.append(f"memory {memory[uuid]} of {gpu.memory}")
        if cores[uuid] > gpu.cores:
            over.append(f"cores {cores[uuid]} of {gpu.cores}")
        if len(holders.get(uuid, ())) > gpu.count:
            over.append(f"{len(holders[uuid])} pods of a split of {gpu.count}")
        if over:
            pods = ", ".join(sorted(holders.get(uuid, ())))
            found.append(
                Finding(
                    "gpu-booking",
                    uuid,
                    f"GPU {uuid} on {gpu.node} over-booked: {'; '.join(over)} ({pods})",
                    pool=_pool(nodes.get(gpu.node)),
                )
            )


def _check_placement(
    live: list[dict[str, Any]], nodes: dict[str, dict[str, Any]], hami: Hami, checks: Counter[str], found: list[Finding]
) -> None:
    for pod in live:
        node = pod["spec"].get("nodeName")
        if not node or node not in nodes or not registered_gpus(nodes[node]) or not _asks(pod, hami.resources):
            continue
        checks["placement"] += 1
        annotations = pod["metadata"].get("annotations", {})
        if annotations.get(HAMI_NODE) != node or not allocations(pod):
            scheduler = pod["spec"].get("schedulerName")
            found.append(
                Finding(
                    "placement",
                    _name(pod),
                    f"pod {_name(pod)} on HAMi node {node} without HAMi's allocation (scheduler {scheduler}, "
                    f"{HAMI_NODE}={annotations.get(HAMI_NODE)})",
                    namespace=pod["metadata"]["namespace"],
                )
            )


def _check_quotas(
    live: list[dict[str, Any]], quotas: list[dict[str, Any]], checks: Counter[str], found: list[Finding]
) -> None:
    for quota in quotas:
        namespace = quota["metadata"]["namespace"]
        hard = quota.get("status", {}).get("hard") or quota["spec"].get("hard", {})
        used = quota.get("status", {}).get("used", {})
        pods = [pod for pod in live if pod["metadata"]["namespace"] == namespace]
        for key, limit in hard.items():
            if not key.startswith("requests.") or key not in used:
                continue
            resource = key.removeprefix("requests.")
            charged, held, most = _quantity(used[key]), sum(_requests(p, resource) for p in pods), _quantity(limit)
            checks["quota-limit"] += 1
            if charged > most or held > most:
                found.append(
                    Finding(
                        "quota-limit",
                        f"{namespace}/{key}",
                        f"{namespace} {key}: used {charged:g}, pods {held:g}, over hard {most:g}",
                        namespace=namespace,
                    )
                )
            checks["quota"] += 1
            if charged != held:
                found.append(
                    Finding(
                        "quota",
                        f"{namespace}/{key}",
                        f"{namespace} {key}: used {charged:g}, live pods {held:g}",
                        namespace=namespace,
                    )
                )


def _check_hami_quota(
    charged: list[dict[str, Any]],
    charges: dict[str, dict[str, tuple[float, float]]],
    hami: Hami,
    checks: Counter[str],
    found: list[Finding],
) -> None:
    """HAMi charges memory in MiB against a limit written in units of memoryFactor MiB (pkg/device/quota.go)."""
    for namespace, resources in charges.items():
        pods = [pod for pod in charged if pod["metadata"]["namespace"] == namespace]
        held = {
            hami.memory_resource: sum(device.memory for pod in pods for device in allocations(pod)),
            hami.cores_resource: sum(device.cores for pod in pods for device in allocations(pod)),
        }
        for resource, (used, limit) in resources.items():
            if resource not in held:
                continue
            most = limit * hami.memory_factor if resource == hami.memory_resource else limit
            checks["hami-quota-limit"] += 1
            if most > 0 and used > most:
                found.append(
                    Finding(
                        "hami-quota-limit",
                        f"{namespace}/{resource}",
                        f"HAMi charges {namespace} {resource} {used:g}, over its limit {most:g}",
                        namespace=namespace,
                    )
                )
            checks["hami-quota"] += 1
            if used != held[resource]:
                found.append(
                    Finding(
                        "hami-quota",
                        f"{namespace}/{resource}",
                        f"HAMi charges {namespace} {resource} {used:g}, its pods hold {held[resource]}",
                        namespace=namespace,
                    )
                )


def _check_claims(
    claims: list[dict[str, Any]], nodes: dict[str, dict[str, Any]], checks: Counter[str], found: list[Finding]
) -> None:
    claimed: dict[str, list[str]] = {}
    for claim in claims:
        node = claim.get("status", {}).get("nodeName")
        checks["nodeclaim"] += 1
        if node:
            claimed.setdefault(node, []).append(claim["metadata"]["name"])
            if node not in nodes and "deletionTimestamp" not in claim["metadata"]:
                found.append(
                    Finding(
                        "nodeclaim",
                        claim["metadata"]["name"],
                        f"NodeClaim {claim['metadata']['name']} names node {node}, gone",
                        pool=claim["metadata"].get("labels", {}).get(names.NODEPOOL_LABEL, ""),
                    )
                )
    for node, names_of in claimed.items():
        checks["nodeclaim-unique"] += 1
        if len(names_of) > 1:
            message = f"node {node} claimed by {', '.join(sorted(names_of))}"
            found.append(Finding("nodeclaim-unique", node, message, pool=_pool(nodes.get(node))))
    for name, node in nodes.items():
        if names.NODEPOOL_LABEL not in node["metadata"].get("labels", {}):
            continue
        checks["nodeclaim"] += 1
        if name not in claimed and "deletionTimestamp" not in node["metadata"]:
            message = f"node {name} of Karpenter has no NodeClaim"
            found.append(Finding("nodeclaim", name, message, pool=_pool(node)))


def hami_quota_charges(metrics: str) -> dict[str, dict[str, tuple[float, float]]]:
    """`hami_resource_quota_used{namespace, quota_name, limit}` of HAMi's metrics text, by namespace and resource."""
    charges: dict[str, dict[str, tuple[float, float]]] = {}
    for line in metrics.splitlines():
        if not line.startswith("hami_resource_quota_used{"):
            continue
        labels_text, value = line[len("hami_resource_quota_used{") :].rsplit("} ", 1)
        labels = dict(part.split("=", 1) for part in labels_text.split('",') if "=" in part)
        labels = {key.strip(): raw.strip().strip('"') for key, raw in labels.items()}
        charges.setdefault(labels["namespace"], {})[labels["quota_name"]] = (float(value), float(labels["limit"]))
    return charges


@dataclass
class Tally:
    """What the checker judged: checks by kind, and the findings that failed (each once, first seen)."""

    checks: Counter[str] = field(default_factory=Counter)
    samples: int = 0
    failed: list[Finding] = field(default_factory=list)

    def messages(self) -> list[str]:
        return [finding.message for finding in self.failed]

    def summary(self) -> dict[str, Any]:
        return {"samples": self.samples, "checks": dict(sorted(self.checks.items())), "failed": self.messages()}


class Invariants(threading.Thread):
    """Samples the cluster every SAMPLE_S in the background and keeps the tally; a finding that is true at once
    fails at once, a lagging one when it persisted past its settle time. `mark`/`since` give one scenario the part
    of the run it saw, filtered to what it owns."""

    def __init__(self, api: Api, hami: Hami, metrics_url: str | None = None, interval_s: float = SAMPLE_S) -> None:
        super().__init__(name="invariants", daemon=True)
        self.api, self.hami, self.metrics_url, self.interval_s = api, hami, metrics_url, interval_s
        self.tally = Tally()
        self._lock = threading.Lock()
        self._first_seen: dict[tuple[str, str], float] = {}
        self._reported: set[tuple[str, str]] = set()
        self._current: list[Finding] = []
        self._stop_requested = threading.Event()

    @classmethod
    def for_release(cls, api: Api, release: HamiValues, metrics_port: int) -> Invariants:
        """The checker for the rig's HAMi release: its resource names, and its metrics on loopback."""
        hami = Hami(
            release.scheduler_name,
            release.resource_names,
            release.resource_mem,
            release.resource_cores,
            release.memory_factor,
        )
        return cls(api, hami, f"http://127.0.0.1:{metrics_port}/metrics")

    def run(self) -> None:
        while not self._stop_requested.wait(self.interval_s):
            self.sample()

    def stop(self) -> Tally:
        self._stop_requested.set()
        if self.is_alive():
            self.join(timeout=30)
        return self.tally

    def read(self) -> Snapshot | None:
        """One consistent-enough look at the cluster; None while the API server is away (a restart)."""
        try:
            snapshot = Snapshot(
                self.api.items("/api/v1/nodes"),
                self.api.items("/api/v1/pods"),
                self.api.items("/apis/karpenter.sh/v1/nodeclaims"),
                self.api.items("/api/v1/resourcequotas"),
            )
        except (ApiError, RigError):
            return None
        if self.metrics_url:
            try:
                with urllib.request.urlopen(self.metrics_url, timeout=5) as response:
                    snapshot.hami_quota = hami_quota_charges(response.read().decode())
            except OSError:
                snapshot.hami_quota = None
        return snapshot

    def sample(self) -> list[Finding]:
        """Judge the cluster once; the findings of this sample (failed or still settling)."""
        snapshot = self.read()
        if snapshot is None:
            return []
        checks, findings = check(snapshot, self.hami)
        now = time.monotonic()
        with self._lock:
            self.tally.samples += 1
            self.tally.checks.update(checks)
            keys = {(f.kind, f.subject) for f in findings}
            self._first_seen = {key: self._first_seen.get(key, now) for key in keys}
            for finding in findings:
                key = (finding.kind, finding.subject)
                settled = not finding.lags or now - self._first_seen[key] >= SETTLE_S[finding.kind]
                if settled and key not in self._reported:
                    self._reported.add(key)
                    self.tally.failed.append(finding)
            self._current = findings
        return findings

    def clean(self) -> bool:
        """Whether the last sample found nothing, lag included: the cluster has converged."""
        with self._lock:
            return self.tally.samples > 0 and not self._current

    def current(self) -> list[Finding]:
        with self._lock:
            return list(self._current)

    def mark(self) -> tuple[Counter[str], int, int]:
        with self._lock:
            return Counter(self.tally.checks), self.tally.samples, len(self.tally.failed)

    def since(self, mark: tuple[Counter[str], int, int], owns: Callable[[Finding], bool]) -> Tally:
        """What was judged since `mark`, and the failures among it that `owns` names."""
        checks, samples, failed = mark
        with self._lock:
            return Tally(
                self.tally.checks - checks,
                self.tally.samples - samples,
                [f for f in self.tally.failed[failed:] if owns(f)],
            )

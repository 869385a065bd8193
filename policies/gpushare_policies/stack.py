"""A read-only view of a stack's resources, built from a plan file or from what the Pulumi engine sends.

Both sources reduce to the same plain values (integral floats become ints, unknown preview values become
`UNKNOWN`), so a rule sees one shape and reports the same message whichever way it runs.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date
from functools import cached_property
from typing import Any, TypeVar

from gpushare import compat, names
from gpushare.images import split_reference

T = TypeVar("T")


class _Unknown:
    """A value the engine cannot know during preview (e.g. the ARN of a key not yet created)."""

    def __repr__(self) -> str:
        return "<unknown during preview>"


UNKNOWN = _Unknown()

HELM_RELEASE = "kubernetes:helm.sh/v3:Release"
NODE_POOL = f"kubernetes:{names.KARPENTER_API}:NodePool"
NODE_OVERLAY = f"kubernetes:{names.NODE_OVERLAY_API}:NodeOverlay"
EC2_NODE_CLASS = f"kubernetes:{names.EC2_NODE_CLASS_API}:EC2NodeClass"
DAEMON_SET = "kubernetes:apps/v1:DaemonSet"
NAMESPACE = "kubernetes:core/v1:Namespace"
CONFIG_MAP = "kubernetes:core/v1:ConfigMap"
RESOURCE_QUOTA = "kubernetes:core/v1:ResourceQuota"
LIMIT_RANGE = "kubernetes:core/v1:LimitRange"
POD_TEMPLATE = "kubernetes:core/v1:PodTemplate"
CAPACITY_BUFFER = f"kubernetes:{names.CAPACITY_BUFFER_API}:CapacityBuffer"
# pulumi-eks is a component: offline (under mocks) it has no children and its inputs are what we see; in a
# real preview its child aws:eks/cluster:Cluster carries the settings and the component only its outputs.
EKS_COMPONENT = "eks:index:Cluster"
EKS_CLUSTER = "aws:eks/cluster:Cluster"
EKS_MANAGED_NODE_GROUP = "eks:index:ManagedNodeGroup"  # pulumi-eks component: its inputs offline
EKS_NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"  # its child in a real preview
# gpushare's component for a cluster it does not own: its inputs state the cluster's Kubernetes minor and the
# Karpenter running there (gpushare/existing.py stated_karpenter).
EXISTING_CLUSTER = "gpushare:index:ExistingCluster"


def plain_data(value: Any) -> Any:
    """Plain dicts and lists; integral floats (the wire format has only doubles) as ints."""
    if isinstance(value, Mapping):
        return {str(key): plain_data(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain_data(item) for item in value]
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


@dataclass(frozen=True)
class Resource:
    urn: str
    type: str
    name: str
    props: dict[str, Any]
    dependencies: tuple[str, ...] = ()

    @property
    def object_name(self) -> str:
        """metadata.name for Kubernetes objects, the Helm release name for releases, else the logical name."""
        if self.type == HELM_RELEASE:
            return str(self.props.get("name") or self.name)
        meta = self.props.get("metadata")
        return str(meta.get("name") or self.name) if isinstance(meta, dict) else self.name

    @property
    def label(self) -> str:
        """How messages name the resource: `NodePool g5-shared`, `Release hami`, `eks:index:Cluster x`."""
        kind = "Release" if self.type == HELM_RELEASE else self.type.rsplit(":", 1)[-1]
        return f"{kind} {self.object_name}" if self.type.startswith("kubernetes:") else f"{self.type} {self.name}"

    def get(self, *path: str | int) -> Any:
        """props at `path`, or None where any step is missing or of the wrong shape."""
        node: Any = self.props
        for step in path:
            if isinstance(step, int):
                node = node[step] if isinstance(node, list) and -len(node) <= step < len(node) else None
            else:
                node = node.get(step) if isinstance(node, dict) else None
            if node is None:
                return None
        return node


@dataclass(frozen=True)
class StackView:
    """Indexed once, so rules that look things up per pool or per namespace stay linear in the stack's size.
    `today` is the day the stack is judged for (date-bound facts such as EKS support windows): the caller's."""

    resources: tuple[Resource, ...]
    today: date
    _memo: dict[Hashable, Any] = field(default_factory=dict, init=False, repr=False, compare=False)

    @cached_property
    def by_urn(self) -> dict[str, Resource]:
        return {r.urn: r for r in self.resources}

    @cached_property
    def _by_type(self) -> dict[str, list[Resource]]:
        grouped: dict[str, list[Resource]] = defaultdict(list)
        for resource in self.resources:
            grouped[resource.type].append(resource)
        return dict(grouped)

    @cached_property
    def _by_object_name(self) -> dict[tuple[str, str], list[Resource]]:
        grouped: dict[tuple[str, str], list[Resource]] = defaultdict(list)
        for resource in self.resources:
            grouped[(resource.type, resource.object_name)].append(resource)
        return dict(grouped)

    def of_type(self, token: str) -> list[Resource]:
        """In stack order; a fresh list, so a caller's sort or append never reaches the index."""
        return list(self._by_type.get(token, ()))

    def memo(self, key: Hashable, compute: Callable[[], T]) -> T:
        """`compute()` once per view and key: what rules derive from the stack (pools, overlay matches) is
        shared by every rule instead of recomputed by each."""
        if key not in self._memo:
            self._memo[key] = compute()
        return self._memo[key]

    def releases(self, chart: str) -> list[Resource]:
        """Helm releases of a chart, by the last segment of the chart reference (`oci://.../karpenter`)."""
        return [r for r in self.of_type(HELM_RELEASE) if chart_name(r) == chart]

    def release(self, chart: str) -> Resource | None:
        found = self.releases(chart)
        return found[0] if found else None

    def objects(self, token: str, name: str) -> list[Resource]:
        return list(self._by_object_name.get((token, name), ()))

    def mock_daemonsets(self) -> list[Resource]:
        """DaemonSets of the HAMi mock device plugin, whatever they are called and wherever their image lives."""
        return [ds for ds in self.of_type(DAEMON_SET) if is_mock_device_plugin(ds)]

    def eks_clusters(self) -> list[Resource]:
        return self.of_type(EKS_CLUSTER) or self.of_type(EKS_COMPONENT)

    def existing_cluster(self) -> Resource | None:
        """The component stating an existing cluster the stack installs onto, if it does."""
        found = self.of_type(EXISTING_CLUSTER)
        return found[0] if found else None

    def kubernetes_version(self) -> tuple[Any, str] | None:
        """The cluster's Kubernetes minor and what holds it: the EKS cluster the stack creates, or the minor the
        stack states for an existing one; None when the stack holds neither."""
        clusters = self.eks_clusters()
        if clusters:
            return clusters[0].get("version"), f"{clusters[0].label}'s version"
        existing = self.existing_cluster()
        if existing is not None:
            return existing.get("kubernetesVersion"), f"{existing.label}'s kubernetesVersion"
        return None

    @cached_property
    def _depends(self) -> dict[str, frozenset[str]]:
        closure: dict[str, frozenset[str]] = {}

        def visit(urn: str, trail: frozenset[str]) -> frozenset[str]:
            if urn in closure:
                return closure[urn]
            resource = self.by_urn.get(urn)
            direct = set(resource.dependencies) if resource else set()
            found = set(direct)
            for dep in direct - trail:
                found |= visit(dep, trail | {urn})
            closure[urn] = frozenset(found)
            return closure[urn]

        for resource in self.resources:
            visit(resource.urn, frozenset())
        return closure

    def depends_on(self, resource: Resource, other: Resource) -> bool:
        """Directly or through other resources: what `pulumi destroy` orders by."""
        return other.urn in self._depends.get(resource.urn, frozenset())


def chart_name(release: Resource) -> str:
    """The chart of a Helm release: the last segment of its chart reference (`oci://.../karpenter` -> karpenter), or
    of a chart archive's path without its version (`charts/hami-2.10.0.tgz` -> hami)."""
    last = str(release.get("chart")).rstrip("/").rsplit("/", 1)[-1]
    archive = names.CHART_ARCHIVE.fullmatch(last)
    return archive["chart"] if archive else last


def containers(daemonset: Resource) -> list[dict[str, Any]]:
    spec = daemonset.get("spec", "template", "spec") or {}
    return [c for key in ("initContainers", "containers") for c in spec.get(key) or [] if isinstance(c, dict)]


KUBELET_DEVICE_PLUGINS = "/var/lib/kubelet/device-plugins"
MOCK_BINARY = "k8s-device-plugin"  # mock-device-plugin v1.0.1 cmd/k8s-device-plugin; NVIDIA's and HAMi's differ
MOCK_CONFIG_FLAG = "--device-config-file"  # the mock's flag; HAMi's plugin (chart 2.8.3) takes --config-file
MOCK_REPOSITORY_NAME = compat.MOCK_IMAGE_REPOSITORY.rsplit("/", 1)[-1]


def is_mock_device_plugin(daemonset: Resource) -> bool:
    """Recognised by what it is, wherever its image was copied to (a private ECR repository, a mirror): it runs
    the mock's binary or image name, is labelled as the mock, or is a device plugin (kubelet device-plugins mount)
    given the mock's device-config flag (HAMi's own plugin takes `--config-file`)."""
    labels = {
        **_mapping(daemonset.get("metadata", "labels")),
        **_mapping(daemonset.get("spec", "template", "metadata", "labels")),
    }
    if any(str(v).endswith(MOCK_REPOSITORY_NAME) for k, v in labels.items() if k.endswith("name") or k == "app"):
        return True
    for container in containers(daemonset):
        words = [str(w) for key in ("command", "args") for w in _list(container.get(key))]
        if split_reference(str(container.get("image") or ""))[0].rsplit("/", 1)[-1] == MOCK_REPOSITORY_NAME:
            return True
        if words and words[0].rsplit("/", 1)[-1] == MOCK_BINARY:
            return True
        mounts = [_mapping(m).get("mountPath") for m in _list(container.get("volumeMounts"))]
        if any(str(m).rstrip("/") == KUBELET_DEVICE_PLUGINS for m in mounts) and any(
            w.startswith(MOCK_CONFIG_FLAG) for w in words
        ):
            return True
    return False


def _mapping(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def from_plan(resources: Iterable[Mapping[str, Any]], today: date) -> StackView:
    """Resources as `make plan` records them (inputs are what the engine would analyse), judged on `today`."""
    return StackView(
        tuple(
            Resource(
                urn=str(r["urn"]),
                type=str(r["type"]),
                name=str(r.get("name") or r["urn"].rsplit("::", 1)[-1]),
                props=plain_data(r.get("inputs") or {}),
                dependencies=tuple(r.get("dependencies") or ()),
            )
            for r in resources
        ),
        today,
    )


def from_engine(resources: Sequence[Any], unknown_error: type[Exception], today: date) -> StackView:
    """Resources as pulumi_policy hands them to a stack policy, judged on `today`; unknown preview values become
    UNKNOWN."""
    return StackView(
        tuple(
            Resource(
                urn=r.urn,
                type=r.resource_type,
                name=r.name,
                props=_known(r.props, unknown_error),
                dependencies=tuple(d.urn for d in r.dependencies),
            )
            for r in resources
        ),
        today,
    )


def _known(value: Any, unknown_error: type[Exception]) -> Any:
    """Copy pulumi_policy's proxies, which raise on unknown values, into plain data."""

    def read(container: Any, key: Any) -> Any:
        try:
            return _known(container[key], unknown_error)
        except unknown_error:
            return UNKNOWN

    if isinstance(value, Mapping):
        return {str(key): read(value, key) for key in value}
    if isinstance(value, Sequence) and not isinstance(value, str):
        return [read(value, index) for index in range(len(value))]
    return plain_data(value)


def eks_settings(cluster: Resource) -> tuple[object, object, object]:
    """(secrets key, public endpoint on, public CIDRs) from either the aws resource or the pulumi-eks inputs."""
    if cluster.type == EKS_CLUSTER:
        config = cluster.get("encryptionConfig") or {}
        if isinstance(config, list):  # older aws providers model it as a one-element list
            config = config[0] if config else {}
        secrets = (config.get("provider") or {}).get("keyArn") if "secrets" in (config.get("resources") or []) else None
        vpc = cluster.get("vpcConfig") or {}
        return secrets, vpc.get("endpointPublicAccess"), vpc.get("publicAccessCidrs")
    return (
        cluster.get("encryptionConfigKeyArn"),
        cluster.get("endpointPublicAccess"),
        cluster.get("publicAccessCidrs"),
    )


def version_of(text: object) -> tuple[int, int, int] | None:
    """A chart version or image tag as (major, minor, patch); None when it is not one."""
    try:
        return compat.parse_version(str(text))
    except ValueError:
        return None


def sorted_by_name(resources: Iterable[Resource]) -> Iterator[Resource]:
    yield from sorted(resources, key=lambda r: (r.object_name, r.urn))

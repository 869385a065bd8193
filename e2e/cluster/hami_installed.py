"""HAMi as Helm made it: what the rig must start outside a Pod, read from the objects Helm created or rendered.

The HAMi chart's scheduler Deployment holds a kube-scheduler container and the vgpu-scheduler-extender beside it, the
ConfigMaps they mount (the KubeSchedulerConfiguration and the device config), its Service and the
MutatingWebhookConfiguration. After `pulumi up` (the engine phase) the provider's Helm has created them in the API
server (`HamiInstalled.read`); for the scenarios and the simulator Helm renders them from the plan's release values
(`HamiInstalled.rendered`, e2e.cluster.helm). The rig runs those containers as processes: their command lines are the
containers' own, every file a container mounts is written under the rig's work dir from the ConfigMap it comes from,
and the paths in the command line follow. Nothing here knows what the chart's templates render; the rig's additions
(its kubeconfig, loopback ports, its serving certificate, the scheduler's back-off) are made in
`e2e.cluster.rig.Rig.start_installed_hami` and listed in the report.

Helm's release records say which chart version each release installed (`installed_charts`).
"""

from __future__ import annotations

import base64
import gzip
import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from e2e.cluster.errors import RigError
from e2e.cluster.kubectl import Kubectl, KubectlError
from gpushare import names, pins

# The scheduler Deployment's containers, as the chart names them.
EXTENDER_CONTAINER = "vgpu-scheduler-extender"
KUBE_SCHEDULER_CONTAINER = "kube-scheduler"
MOCK_CONFIG_VOLUME = "device-config"
# The kinds of the release with no namespace.
CLUSTER_SCOPED = ("MutatingWebhookConfiguration",)
NOT_ONE = (
    f"Helm's release {names.HAMI_RELEASE} holds not exactly one scheduler Deployment (container {EXTENDER_CONTAINER}), "
    "one Service in front of it and one MutatingWebhookConfiguration"
)


def _get(kubectl: Kubectl, *args: str) -> dict[str, Any]:
    return dict(json.loads(kubectl.run("get", *args, "-o", "json")))


def _flag(command: Iterable[str], name: str) -> str | None:
    """The value of `--name=value` in a command line (None when absent)."""
    prefix = f"--{name}="
    return next((arg.removeprefix(prefix) for arg in command if arg.startswith(prefix)), None)


def _mounted_yaml(container: Container, flag: str, whose: str) -> dict[str, Any]:
    """The YAML file the container's `--flag` names, as the ConfigMap it mounts there holds it."""
    path = _flag(container.command, flag)
    if path is None or path not in container.files:
        raise RigError(f"{whose}'s --{flag} {path!r} is no file it mounts from a ConfigMap")
    return dict(yaml.safe_load(container.files[path]))


@dataclass(frozen=True)
class Container:
    """One container of a Pod template as the rig runs it: its command line and literal env, with the files it mounts
    from ConfigMaps (mount path -> content) and the Secret volumes it mounts (mount path -> Secret name)."""

    command: tuple[str, ...]
    env: Mapping[str, str]
    files: Mapping[str, str]
    secrets: Mapping[str, str]

    def materialize(self, root: Path) -> list[str]:
        """Every mounted file written under `root` at its mount path; the command line (without its binary) with
        those paths under `root`."""
        for mount, content in self.files.items():
            target = root / mount.lstrip("/")
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(content)
        mounts = sorted({*self.files, *self.secrets}, key=len, reverse=True)

        def local(arg: str) -> str:
            flag, equals, value = arg.partition("=")
            for mount in mounts:
                if equals and (value == mount or value.startswith(mount.rstrip("/") + "/")):
                    return f"{flag}={root}/{value.lstrip('/')}"
            return arg

        return [local(arg) for arg in self.command[1:]]


# A ConfigMap's data by name, in the release's namespace.
ConfigMapData = Callable[[str], Mapping[str, Any]]


def _container(configmap: ConfigMapData, spec: Mapping[str, Any], name: str) -> Container:
    """The container `name` of a Pod spec, its ConfigMap mounts read with `configmap`."""
    found = [c for c in spec["containers"] if c["name"] == name]
    if not found:
        raise RigError(f"the Pod template has no container {name} (it has {[c['name'] for c in spec['containers']]})")
    [container] = found
    volumes = {volume["name"]: volume for volume in spec.get("volumes", [])}
    files: dict[str, str] = {}
    secrets: dict[str, str] = {}
    for mount in container.get("volumeMounts", []):
        volume = volumes[mount["name"]]
        if "secret" in volume:
            secrets[mount["mountPath"]] = volume["secret"]["secretName"]
        elif "configMap" in volume:
            data = configmap(volume["configMap"]["name"])
            if "subPath" in mount:
                files[mount["mountPath"]] = str(data[mount["subPath"]])
            else:
                files |= {f"{mount['mountPath'].rstrip('/')}/{key}": str(value) for key, value in data.items()}
    env = {item["name"]: str(item["value"]) for item in container.get("env", []) if "value" in item}
    return Container(tuple([*container.get("command", []), *container.get("args", [])]), env, files, secrets)


def _selects(service: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    """Whether the Service's selector may pick a Pod of a template with these labels: each selector label the
    template sets has the selector's value, and one at least is set. A label the Pod gets only at run time stays out
    (HAMi's scheduler Service selects `hami.io/scheduler-role: leader`, which the leader sets on its own Pod)."""
    selector = service["spec"].get("selector") or {}
    shared = [key for key in selector if key in labels]
    return bool(shared) and all(labels[key] == selector[key] for key in shared)


def _device_section(document: Mapping[str, Any]) -> Mapping[str, Any]:
    return dict(document.get("nvidia") or {})


@dataclass(frozen=True)
class HamiInstalled:
    """HAMi's scheduler, its Service, webhook and the mock's config as Helm made them."""

    extender: Container
    kube_scheduler: Container
    webhook: Mapping[str, Any]
    # The Service in front of the scheduler Pod (its ports and their target ports).
    service: Mapping[str, Any]
    # The device-config.yaml the mock device plugin's DaemonSet mounts.
    mock_device_config: str

    @classmethod
    def _of(
        cls,
        created: list[dict[str, Any]],
        configmap: ConfigMapData,
        live: Callable[[dict[str, Any]], dict[str, Any]],
        mock_device_config: str,
    ) -> HamiInstalled:
        """From the release's objects (`created`), each read as `live` gives it (RigError when the release holds not
        exactly one scheduler Deployment, one Service in front of it and one MutatingWebhookConfiguration)."""
        deployments = [
            live(doc)
            for doc in created
            if doc["kind"] == "Deployment"
            and any(c["name"] == EXTENDER_CONTAINER for c in doc["spec"]["template"]["spec"]["containers"])
        ]
        webhooks = [live(doc) for doc in created if doc["kind"] == "MutatingWebhookConfiguration"]
        if len(deployments) != 1 or len(webhooks) != 1:
            raise RigError(NOT_ONE)
        [deployment], [webhook] = deployments, webhooks
        pod_labels = deployment["spec"]["template"]["metadata"].get("labels") or {}
        services = [live(doc) for doc in created if doc["kind"] == "Service" and _selects(doc, pod_labels)]
        if len(services) != 1:
            raise RigError(NOT_ONE)
        spec = deployment["spec"]["template"]["spec"]
        return cls(
            _container(configmap, spec, EXTENDER_CONTAINER),
            _container(configmap, spec, KUBE_SCHEDULER_CONTAINER),
            webhook,
            services[0],
            mock_device_config,
        )

    @classmethod
    def read(cls, kubectl: Kubectl) -> HamiInstalled:
        """The objects Helm's record of the release names (its manifest), as the API server holds them (RigError
        naming what is missing)."""
        namespace = names.HAMI_NAMESPACE

        def live(doc: dict[str, Any]) -> dict[str, Any]:
            scope = ["-n", namespace] if doc["kind"] not in CLUSTER_SCOPED else []
            return _get(kubectl, doc["kind"].lower(), doc["metadata"]["name"], *scope)

        def configmap(name: str) -> Mapping[str, Any]:
            return _get(kubectl, "configmap", name, "-n", namespace).get("data") or {}

        try:
            record = helm_release_record(kubectl, names.HAMI_RELEASE, namespace)
            mock = _get(kubectl, "daemonset", names.MOCK_NAME, "-n", names.MOCK_NAMESPACE)["spec"]["template"]["spec"]
            [volume] = [v for v in mock["volumes"] if v["name"] == MOCK_CONFIG_VOLUME]
            mock_config = _get(kubectl, "configmap", volume["configMap"]["name"], "-n", names.MOCK_NAMESPACE)
            created = [doc for doc in yaml.safe_load_all(record["manifest"]) if doc]
            return cls._of(created, configmap, live, str(mock_config["data"][names.HAMI_DEVICE_CONFIG_KEY]))
        except KubectlError as error:
            raise RigError(f"HAMi's objects as Helm created them: {str(error).splitlines()[-1]}") from None

    @classmethod
    def rendered(cls, objects: list[dict[str, Any]], mock_device_config: str) -> HamiInstalled:
        """The objects Helm rendered for the release (`helm template`), beside the device config the stack's mock
        DaemonSet mounts (RigError naming what is missing)."""
        configmaps = {o["metadata"]["name"]: o.get("data") or {} for o in objects if o["kind"] == "ConfigMap"}

        def configmap(name: str) -> Mapping[str, Any]:
            if name not in configmaps:
                raise RigError(f"the HAMi chart rendered no ConfigMap {name} (it rendered {sorted(configmaps)})")
            return configmaps[name]

        return cls._of(objects, configmap, lambda doc: doc, mock_device_config)

    @property
    def device_config(self) -> dict[str, Any]:
        """The device config the extender reads (--device-config-file), as the mounted ConfigMap holds it."""
        return _mounted_yaml(self.extender, "device-config-file", "the extender")

    @property
    def scheduler_configuration(self) -> dict[str, Any]:
        """The KubeSchedulerConfiguration the kube-scheduler container reads (--config)."""
        return _mounted_yaml(self.kube_scheduler, "config", "the kube-scheduler")

    @property
    def scheduler_name(self) -> str:
        return str(_flag(self.extender.command, "scheduler-name"))

    @property
    def metrics_port(self) -> int:
        """Where the extender serves its metrics (its --metrics-bind-address)."""
        return int(str(_flag(self.extender.command, "metrics-bind-address")).rsplit(":", 1)[-1])

    @property
    def service_name(self) -> str:
        return str(self.service["metadata"]["name"])

    def service_target_port(self, port_name: str) -> int:
        """The container port behind the Service port `port_name` (RigError when it has none, or names one)."""
        ports = {str(port.get("name")): port for port in self.service["spec"]["ports"]}
        if port_name not in ports:
            raise RigError(f"Service {self.service_name} has no port {port_name} (it has {sorted(ports)})")
        target = ports[port_name].get("targetPort", ports[port_name]["port"])
        if not isinstance(target, int):
            raise RigError(f"Service {self.service_name} port {port_name} targets {target!r}, not a port number")
        return target

    @property
    def extender_port(self) -> int:
        """Where the extender serves /filter, /bind, /webhook and /healthz (its --http_bind)."""
        return int(str(_flag(self.extender.command, "http_bind")).rsplit(":", 1)[-1])

    @property
    def serves_tls(self) -> bool:
        return _flag(self.extender.command, "cert_file") is not None

    @property
    def resource_names(self) -> tuple[str, ...]:
        """The NVIDIA resources HAMi manages (count, memory, cores, memory percentage), from its device config."""
        nvidia = _device_section(self.device_config)
        keys = ("resourceCountName", "resourceMemoryName", "resourceCoreName", "resourceMemoryPercentageName")
        return tuple(str(nvidia[key]) for key in keys)

    def patched_webhook(self, url: str, ca_bundle: str) -> dict[str, Any]:
        """The MutatingWebhookConfiguration reaching the extender at `url` (the rig has no Service routing) and
        trusting `ca_bundle` (the chart's cert-gen Job's work, which KWOK completes without running)."""
        patched = json.loads(json.dumps(self.webhook))
        for hook in patched["webhooks"]:
            hook["clientConfig"] = {"url": url, "caBundle": ca_bundle}
        return patched


def helm_release_record(kubectl: Kubectl, release: str, namespace: str) -> dict[str, Any]:
    """The newest deployed revision of a Helm release, from Helm's storage Secret (base64 of a gzipped JSON)."""
    selector = f"owner=helm,name={release},status=deployed"
    items = _get(kubectl, "secrets", "-n", namespace, "-l", selector)["items"]
    if not items:
        raise RigError(f"no deployed Helm release {namespace}/{release}")
    newest = max(items, key=lambda item: int(item["metadata"]["labels"]["version"]))
    encoded = base64.b64decode(newest["data"]["release"])
    return dict(json.loads(gzip.decompress(base64.b64decode(encoded))))


def installed_charts(kubectl: Kubectl) -> dict[str, tuple[str, str]]:
    """Release name -> (chart, version) of every deployed Helm release, from Helm's storage Secrets' records."""
    items = _get(kubectl, "secrets", "-A", "-l", "owner=helm,status=deployed")["items"]
    installed = {}
    for item in items:
        release, namespace = item["metadata"]["labels"]["name"], item["metadata"]["namespace"]
        metadata = helm_release_record(kubectl, release, namespace)["chart"]["metadata"]
        installed[release] = (str(metadata["name"]), str(metadata["version"]))
    return installed


def chart_deviations(kubectl: Kubectl) -> list[str]:
    """A line per Helm release whose installed chart version (Helm's record) is not the stack's pin."""
    return [
        f"{release}: chart {chart} {version} installed from the archives folder, the stack pins "
        f"{pins.chart_version(chart)} (the program warns)"
        for release, (chart, version) in sorted(installed_charts(kubectl).items())
        if version != pins.chart_version(chart)
    ]

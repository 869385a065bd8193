"""What the HAMi chart 2.10.0 renders for the scheduler, from the stack's HAMi release values.

The rig runs HAMi's real scheduler extender and a second kube-scheduler, configured as the chart's templates
configure them (Project-HAMi/HAMi v2.10.0, charts/hami/templates/scheduler/{deployment,configmap,
device-configmap,webhook}.yaml, templates/_helpers.tpl and values.yaml); every value comes from the release's values
over the chart's defaults, as Helm merges them. What the rig must change to run them outside a Pod is made in
`rig.Rig.start_hami`, not here: this module only says what the chart says.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

import yaml

from gpushare import compat, names

# charts/hami/values.yaml at v2.10.0, only the keys the scheduler's templates read.
CHART_DEFAULTS: dict[str, Any] = {
    "resourceName": "nvidia.com/gpu",
    "resourceMem": "nvidia.com/gpumem",
    "resourceMemPercentage": "nvidia.com/gpumem-percentage",
    "resourceCores": "nvidia.com/gpucores",
    "resourcePriority": "nvidia.com/priority",
    "schedulerName": "hami-scheduler",
    "scheduler": {
        "defaultSchedulerPolicy": {"nodeSchedulerPolicy": "binpack", "gpuSchedulerPolicy": "spread"},
        "metricsBindAddress": ":9395",
        "forceOverwriteDefaultScheduler": True,
        "leaderElect": True,
        "kubeScheduler": {"enabled": True, "extraNewArgs": ["--config=/config/config.yaml", "-v=4"]},
        "extender": {"extraArgs": ["--debug", "-v=4"]},
        "nodeLockExpire": "5m",
        "admissionWebhook": {
            "enabled": True,
            "customURL": {"enabled": False, "host": "127.0.0.1", "port": 31998, "path": "/webhook"},
            "whitelistNamespaces": None,
            "manageNamespaceSelector": True,
            "namespaceSelector": {"matchLabels": None, "matchExpressions": []},
            "objectSelector": {"matchExpressions": []},
            "reinvocationPolicy": "Never",
            "failurePolicy": "Ignore",
        },
        "service": {"httpPort": 443, "httpTargetPort": 443, "monitorPort": 31993, "monitorTargetPort": 9395},
    },
    "devicePlugin": {
        "deviceSplitCount": 10,
        "deviceMemoryScaling": 1,
        "deviceCoreScaling": 1,
        "enableNumaTopology": False,
        "preConfiguredDeviceMemory": 0,
        "runtimeClassName": "",
    },
    "devices": {"nvidia": {"gpuCorePolicy": "default", "libCudaLogLevel": 1}},
    "legacyMetrics": False,
    "device-config": {},
}
# Where the extender serves /filter, /bind and /webhook inside the scheduler Pod (deployment.yaml: 443 with the
# admission webhook, else 80); the kube-scheduler beside it calls it on loopback.
EXTENDER_PORT = {True: 443, False: 80}


def merged(values: dict[str, Any]) -> dict[str, Any]:
    """Release values over the chart defaults, as Helm merges them (maps merge, a null deletes a default)."""

    def merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
        out = copy.deepcopy(base)
        for key, value in over.items():
            if value is None:
                out.pop(key, None)
            elif isinstance(value, dict) and isinstance(out.get(key), dict):
                out[key] = merge(out[key], value)
            else:
                out[key] = copy.deepcopy(value)
        return out

    return merge(CHART_DEFAULTS, values)


@dataclass(frozen=True)
class HamiRelease:
    """The HAMi release as its chart renders the scheduler, from merged values."""

    values: dict[str, Any]

    @classmethod
    def from_values(cls, values: dict[str, Any]) -> HamiRelease:
        return cls(merged(values))

    @property
    def _scheduler(self) -> dict[str, Any]:
        return self.values["scheduler"]

    @property
    def webhook_enabled(self) -> bool:
        return bool(self._scheduler["admissionWebhook"]["enabled"])

    @property
    def scheduler_name(self) -> str:
        return str(self.values["schedulerName"])

    @property
    def resource_name(self) -> str:
        return str(self.values["resourceName"])

    @property
    def resource_mem(self) -> str:
        return str(self.values["resourceMem"])

    @property
    def resource_cores(self) -> str:
        return str(self.values["resourceCores"])

    @property
    def resource_mem_percentage(self) -> str:
        return str(self.values["resourceMemPercentage"])

    @property
    def resource_names(self) -> tuple[str, ...]:
        """The NVIDIA resources HAMi manages (what a kubelet registers 0 of until the device plugins report)."""
        return (self.resource_name, self.resource_mem, self.resource_cores, self.resource_mem_percentage)

    @property
    def _nvidia(self) -> dict[str, Any]:
        """The device config's `nvidia` section: HAMi's scheduler and device plugin read the sharing profile here."""
        return dict(self.device_config()["nvidia"])

    @property
    def split_count(self) -> int:
        return int(self._nvidia["deviceSplitCount"])

    @property
    def memory_scaling(self) -> float:
        return float(self._nvidia["deviceMemoryScaling"])

    @property
    def core_scaling(self) -> float:
        return float(self._nvidia["deviceCoreScaling"])

    @property
    def memory_factor(self) -> int:
        return int(self._nvidia.get("memoryFactor", 1))

    @property
    def fullname(self) -> str:
        return compat.hami_fullname(names.HAMI_RELEASE, self.values)

    @property
    def metrics_port(self) -> int:
        """The extender's metrics port (deployment.yaml: the last `:`-part of metricsBindAddress)."""
        return int(str(self._scheduler["metricsBindAddress"]).rsplit(":", 1)[-1])

    @property
    def extender_port(self) -> int:
        return EXTENDER_PORT[self.webhook_enabled]

    def service_target_port(self, port_name: str) -> int:
        """The container port behind a port of the scheduler's Service (service.yaml: `http` -> httpTargetPort,
        `monitor` -> monitorTargetPort)."""
        service = self._scheduler["service"]
        targets = {"http": service.get("httpTargetPort", 443), "monitor": service["monitorTargetPort"]}
        return int(targets[port_name])

    @property
    def node_lock_expire(self) -> str:
        return str(self._scheduler.get("nodeLockExpire") or "")

    def device_config(self) -> dict[str, Any]:
        """The device ConfigMap's device-config.yaml (device-configmap.yaml): `device-config.content` whole when the
        values set it, else the chart's own, of which only the `nvidia` section is written here (the other vendors'
        sections and the MIG profile allowlist are left out: no rig node has those devices)."""
        content = (self.values.get("device-config") or {}).get("content")
        if content:
            return dict(yaml.safe_load(content))
        plugin = self.values["devicePlugin"]
        nvidia = self.values["devices"]["nvidia"]
        return {
            "nvidia": {
                "resourceCountName": self.resource_name,
                "resourceMemoryName": self.resource_mem,
                "resourceMemoryPercentageName": self.resource_mem_percentage,
                "resourceCoreName": self.resource_cores,
                "resourcePriorityName": self.values["resourcePriority"],
                "overwriteEnv": False,
                "defaultMemory": 0,
                "defaultCores": 0,
                "defaultGPUNum": 1,
                "preConfiguredDeviceMemory": plugin.get("preConfiguredDeviceMemory") or 0,
                "memoryFactor": 1,
                "deviceSplitCount": plugin["deviceSplitCount"],
                "deviceMemoryScaling": plugin["deviceMemoryScaling"],
                "deviceCoreScaling": plugin["deviceCoreScaling"],
                "enableNumaTopology": bool(plugin.get("enableNumaTopology") or False),
                "gpuCorePolicy": nvidia["gpuCorePolicy"],
                "libCudaLogLevel": nvidia["libCudaLogLevel"],
                "runtimeClassName": str(plugin.get("runtimeClassName") or ""),
            }
        }

    def extender_args(self, device_config_file: str, cert_file: str, key_file: str) -> list[str]:
        """The vgpu-scheduler-extender container's command after `scheduler` (deployment.yaml), with the files
        it mounts given as paths; leader election in the release's namespace."""
        scheduler = self._scheduler
        policy = scheduler["defaultSchedulerPolicy"]
        port = self.extender_port
        args = [f"--http_bind=0.0.0.0:{port}"]
        if self.webhook_enabled:
            args += [f"--cert_file={cert_file}", f"--key_file={key_file}"]
        args += [
            f"--scheduler-name={self.scheduler_name}",
            f"--metrics-bind-address={scheduler['metricsBindAddress']}",
            f"--node-scheduler-policy={policy['nodeSchedulerPolicy']}",
            f"--gpu-scheduler-policy={policy['gpuSchedulerPolicy']}",
            f"--force-overwrite-default-scheduler={str(scheduler['forceOverwriteDefaultScheduler']).lower()}",
            f"--device-config-file={device_config_file}",
            f"--leader-elect={str(scheduler['leaderElect']).lower()}",
            f"--leader-elect-resource-name={self.scheduler_name}",
            f"--leader-elect-resource-namespace={names.HAMI_NAMESPACE}",
        ]
        if self.values["legacyMetrics"]:
            args.append("--legacy-metrics=true")
        return args + [str(arg) for arg in scheduler["extender"].get("extraArgs") or []]

    def kube_scheduler_args(self, config_file: str) -> list[str]:
        """The kube-scheduler container's command after `kube-scheduler` for Kubernetes >= 1.22, with the
        config file it mounts given as a path."""
        scheduler = self._scheduler
        extra = [
            f"--config={config_file}" if str(arg).startswith("--config=") else str(arg)
            for arg in scheduler["kubeScheduler"].get("extraNewArgs") or []
        ]
        return [
            *extra,
            f"--leader-elect={str(scheduler['leaderElect']).lower()}",
            f"--leader-elect-resource-name={self.scheduler_name}",
            f"--leader-elect-resource-namespace={names.HAMI_NAMESPACE}",
        ]

    def scheduler_configuration(self) -> dict[str, Any]:
        """configmap.yaml's KubeSchedulerConfiguration for Kubernetes >= 1.26 (only the NVIDIA resources of the
        `hami-vgpu.scheduler.managedResources` list: the other vendors' names are ignored the same way and match no
        pod here). Leader election is off: the rig runs one kube-scheduler."""
        if self.webhook_enabled:
            endpoint: dict[str, Any] = {
                "urlPrefix": "https://127.0.0.1:443",
                "enableHTTPS": True,
                "tlsConfig": {"insecure": True},
            }
        else:
            endpoint = {"urlPrefix": "http://127.0.0.1:80", "enableHTTPS": False}
        managed = [*self.resource_names, str(self.values["resourcePriority"])]
        return {
            "apiVersion": "kubescheduler.config.k8s.io/v1",
            "kind": "KubeSchedulerConfiguration",
            "leaderElection": {"leaderElect": False},
            "profiles": [{"schedulerName": self.scheduler_name}],
            "extenders": [
                {
                    **endpoint,
                    "filterVerb": "filter",
                    "bindVerb": "bind",
                    "nodeCacheCapable": True,
                    "weight": 1,
                    "httpTimeout": "30s",
                    "managedResources": [{"name": name, "ignoredByScheduler": True} for name in managed],
                }
            ],
        }

    def mutating_webhook(self, url: str, ca_bundle: str) -> dict[str, Any]:
        """webhook.yaml's MutatingWebhookConfiguration; the rig reaches the extender by `url` where the chart
        names its Service (`customURL` renders the same form)."""
        webhook = self._scheduler["admissionWebhook"]
        ignore = {"key": names.HAMI_WEBHOOK_IGNORE[0], "operator": "NotIn", "values": ["ignore"]}
        namespaces = webhook.get("namespaceSelector") or {}
        namespace_selector: dict[str, Any] = {}
        if namespaces.get("matchLabels"):
            namespace_selector["matchLabels"] = dict(namespaces["matchLabels"])
        namespace_expressions = [ignore]
        if webhook.get("whitelistNamespaces"):
            namespace_expressions.append(
                {
                    "key": "kubernetes.io/metadata.name",
                    "operator": "NotIn",
                    "values": list(webhook["whitelistNamespaces"]),
                }
            )
        namespace_selector["matchExpressions"] = namespace_expressions + list(namespaces.get("matchExpressions") or [])
        objects = webhook.get("objectSelector") or {}
        object_selector: dict[str, Any] = {}
        if objects.get("matchLabels"):
            object_selector["matchLabels"] = dict(objects["matchLabels"])
        object_selector["matchExpressions"] = [dict(ignore), *(objects.get("matchExpressions") or [])]
        hook: dict[str, Any] = {
            "admissionReviewVersions": ["v1beta1"],
            "clientConfig": {"url": url, "caBundle": ca_bundle},
            "failurePolicy": webhook["failurePolicy"],
            "matchPolicy": "Equivalent",
            "name": "vgpu.hami.io",
        }
        if webhook.get("manageNamespaceSelector", True):
            hook["namespaceSelector"] = namespace_selector
        hook |= {
            "objectSelector": object_selector,
            "reinvocationPolicy": webhook["reinvocationPolicy"],
            "rules": [
                {
                    "apiGroups": [""],
                    "apiVersions": ["v1"],
                    "operations": ["CREATE"],
                    "resources": ["pods"],
                    "scope": "*",
                }
            ],
            "sideEffects": "None",
            "timeoutSeconds": 10,
        }
        return {
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "MutatingWebhookConfiguration",
            "metadata": {"name": f"{self.fullname}-webhook"},
            "webhooks": [hook],
        }

"""Bring the offline cluster up for the suites or the simulator, and down again.

`Cluster.start` runs the control plane with Karpenter's CRDs and HAMi's scheduler, extender and webhook (enough
for the objects scenarios); `Cluster.run_stack` then applies the running stack and starts KWOK, Karpenter,
Prometheus and the node agent. `Cluster.stop` stops every process and keeps their logs, whatever happened.
"""

from __future__ import annotations

import base64
import json
import shutil
import ssl
import subprocess
import sys
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml

from e2e.cluster import prometheus
from e2e.cluster.changes import Changes
from e2e.cluster.device_plugins import NvidiaPluginConfig
from e2e.cluster.errors import RigError
from e2e.cluster.hami_chart import HamiRelease
from e2e.cluster.instance_types import kwok_instance_types
from e2e.cluster.kubectl import Kubectl, KubectlError
from e2e.cluster.node_agent import RIG_STACK_LABEL, NodeAgent
from e2e.cluster.rig import Rig, wait_for
from e2e.cluster.stack import Plan, feature_gates
from e2e.cluster.tenants import Tenant
from e2e.cluster.workloads import Context, install_running_stack
from gpushare import names
from gpushare.catalog import InstanceType, load_catalog


def say(message: str) -> None:
    print(f"e2e: {message}", file=sys.stderr, flush=True)


@dataclass
class Cluster:
    """The rig's processes for `plans`, HAMi configured from the `running` stack's release."""

    bin_dir: Path
    work: Path
    plans: dict[str, Plan]
    running: str
    tenants: tuple[Tenant, ...] = ()
    rig: Rig = field(init=False)
    agent: NodeAgent | None = field(default=None, init=False)
    changes: Changes | None = field(default=None, init=False)

    def __post_init__(self) -> None:
        self.rig = Rig(self.bin_dir, self.work)

    def start(self) -> Context:
        """The control plane, Karpenter's CRDs, HAMi's scheduler and webhook; the node agent built, not started."""
        say("starting etcd, kube-apiserver, kube-controller-manager, kube-scheduler")
        rig = self.rig
        rig.start_control_plane()
        kubectl = Kubectl(Path(rig.binary("kubectl")), rig.kubeconfig)
        _apply_crds(rig, kubectl)
        wait_for("the default ServiceAccount", lambda: _has_default_sa(kubectl), 60)
        plan = self.plans[self.running]
        hami = HamiRelease.from_values(plan.helm_values[names.HAMI_RELEASE])
        nvidia_values = plan.helm_values.get(names.NVIDIA_PLUGIN_RELEASE)
        nvidia = NvidiaPluginConfig.from_values(nvidia_values) if nvidia_values is not None else None
        say("starting HAMi's scheduler extender and webhook, and its kube-scheduler")
        _start_hami(rig, kubectl, hami, self._device_configs(self.running).hami)
        catalog = load_catalog()

        def start_hami_node(node: str, itype: InstanceType, labels: dict[str, str]) -> None:
            _start_hami_node(rig, self._device_configs(labels.get(RIG_STACK_LABEL, self.running)), node, itype)

        zeroed = (*hami.resource_names, names.GPU_SHARED)
        self.agent = NodeAgent(rig.api, catalog, zeroed, start_hami_node, nvidia)
        self.changes = Changes(rig.api)
        self.changes.start()
        return Context(
            rig.log_dir,
            rig.api,
            kubectl,
            catalog,
            self.plans,
            self.agent,
            hami,
            datetime.now(UTC),
            self.running,
            self.tenants,
            changes=self.changes,
        )

    def run_stack(self, ctx: Context, left_out: Callable[[dict[str, Any]], bool] = lambda _obj: False) -> None:
        """The running stack applied as the rig runs it (but the objects `left_out` names), with KWOK, Karpenter
        (the stack's feature gates), Prometheus scraping Karpenter and HAMi, and the node agent playing the GPU
        nodes' kubelets."""
        say("starting KWOK, Karpenter (kwok provider, the stack's feature gates) and Prometheus")
        rig = self.rig
        install_running_stack(ctx, left_out)
        instance_types = self.work / "instance-types.json"
        instance_types.write_text(json.dumps(kwok_instance_types(ctx.catalog), indent=1))
        rig.start_kwok()
        gates = feature_gates(ctx.plan)
        rig.start_karpenter(instance_types, gates)
        ctx.restart_karpenter = lambda changed: _restart_karpenter(rig, instance_types, {**gates, **changed})
        rig.start_prometheus(prometheus.write_config(self.work, ctx.hami, ctx.plan))
        wait_for("Prometheus scraping Karpenter", prometheus.scraping_karpenter, 90, interval_s=1)
        hami_job = f"{ctx.hami.fullname}-scheduler"
        wait_for("Prometheus scraping HAMi's scheduler", lambda: prometheus.scraping(hami_job), 90, interval_s=1)
        ctx.agent.start()

    def _device_configs(self, stack: str) -> DeviceConfigs:
        """The device configs the stack's HAMi release and its mock DaemonSet render, written on first use (the
        running stack's HAMi config is the one HAMi's scheduler reads; a scenario may add a plan of its own)."""
        directory = self.rig.hami_dir / stack
        configs = DeviceConfigs(directory / "device-config.yaml", directory / "mock-device-config.yaml")
        if not configs.mock.exists():
            plan = self.plans[stack]
            release = HamiRelease.from_values(plan.helm_values[names.HAMI_RELEASE])
            directory.mkdir(parents=True, exist_ok=True)
            configs.hami.write_text(yaml.safe_dump(release.device_config()))
            configs.mock.write_text(mock_device_config(plan, release))
        return configs

    def stop(self, keep_logs: Path) -> None:
        """Stop every process this cluster started; their logs are kept in `keep_logs` (which GPU HAMi chose, why a
        pod stayed pending), the data directories (etcd, TSDB) go."""
        if self.changes is not None:
            self.changes.stop()
        if self.agent is not None and self.agent.is_alive():
            self.agent.stop()
        self.rig.stop()
        shutil.rmtree(keep_logs, ignore_errors=True)
        if self.rig.log_dir.exists():
            shutil.copytree(self.rig.log_dir, keep_logs)
        shutil.rmtree(self.work, ignore_errors=True)


def _apply_crds(rig: Rig, kubectl: Kubectl) -> None:
    for writer in ("aws-crds", "kwok-crds"):
        kubectl.apply_stream(subprocess.run([rig.binary(writer)], check=True, capture_output=True, text=True).stdout)
    kubectl.run("wait", "--for=condition=Established", "crd", "--all", "--timeout=60s")


def _restart_karpenter(rig: Rig, instance_types: Path, gates: dict[str, str]) -> None:
    rig.stop_process("karpenter")
    rig.start_karpenter(instance_types, gates)
    wait_for("Karpenter serving metrics again", prometheus.scraping_karpenter, 90, interval_s=1)


def _start_hami(rig: Rig, kubectl: Kubectl, release: HamiRelease, device_config: Path) -> None:
    """HAMi's scheduler and its kube-scheduler as the release renders them, and its MutatingWebhookConfiguration,
    which reaches the extender on loopback (the chart names its Service: the rig has no Service routing)."""
    cert = rig.start_hami(release, device_config)
    url = f"https://127.0.0.1:{release.extender_port}/webhook"
    kubectl.apply([release.mutating_webhook(url, base64.b64encode(cert.read_bytes()).decode())])
    wait_for("HAMi's scheduler extender serving", lambda: _serving(rig, release), 90)


def _serving(rig: Rig, release: HamiRelease) -> bool:
    if not rig.alive("hami-scheduler"):
        raise RigError(f"hami-scheduler exited; see {rig.log_dir / 'hami-scheduler.log'}")
    tls = ssl.create_default_context()
    tls.check_hostname = False
    tls.verify_mode = ssl.CERT_NONE
    scheme = "https" if release.webhook_enabled else "http"
    try:
        with urllib.request.urlopen(f"{scheme}://127.0.0.1:{release.extender_port}/healthz", context=tls, timeout=5):
            return True
    except OSError:
        return False


@dataclass(frozen=True)
class DeviceConfigs:
    """A stack's device config files: HAMi's (its scheduler and device plugin read it) and the mock's."""

    hami: Path
    mock: Path


def mock_device_config(plan: Plan, release: HamiRelease) -> str:
    """The device-config.yaml the stack's mock DaemonSet mounts: a ConfigMap of the plan's, or HAMi's own device
    ConfigMap, which the chart renders (`release.device_config()`)."""
    [daemonset] = [d for d in plan.of_kind("DaemonSet") if d["metadata"]["name"] == names.MOCK_NAME]
    spec = daemonset["spec"]["template"]["spec"]
    [volume] = [v for v in spec["volumes"] if "configMap" in v and v["name"] == "device-config"]
    name = volume["configMap"]["name"]
    namespace = daemonset["metadata"]["namespace"]
    for configmap in plan.of_kind("ConfigMap"):
        if (configmap["metadata"]["name"], configmap["metadata"].get("namespace")) == (name, namespace):
            return str(configmap["data"][names.HAMI_DEVICE_CONFIG_KEY])
    if name == f"{release.fullname}-scheduler-device":
        return yaml.safe_dump(release.device_config())
    raise RigError(f"the mock device plugin of {plan.stack} mounts ConfigMap {namespace}/{name}, which nothing renders")


def _start_hami_node(rig: Rig, configs: DeviceConfigs, node: str, itype: InstanceType) -> None:
    """rig-gpu-node for a HAMi pool's node: its GPUs as NVML would report them, the release's device config (the
    one the chart mounts into HAMi's device plugin), and the real mock device plugin with the config its DaemonSet
    mounts."""
    model = load_catalog().gpu_model_of(itype)
    rig.start_gpu_node(
        node,
        [
            f"--node={node}",
            f"--kubeconfig={rig.kubeconfig}",
            f"--device-config={configs.hami}",
            f"--gpus={itype.gpu_count}",
            f"--gpu-memory-mib={model.nvml_memory_mib}",
            f"--gpu-name=NVIDIA {model.name}",
            f"--mock={rig.binary('mock-device-plugin')}",
            f"--mock-device-config={configs.mock}",
        ],
    )


def _has_default_sa(kubectl: Kubectl) -> bool:
    try:
        kubectl.run("get", "serviceaccount", "default", "-n", "default")
    except KubectlError:
        return False
    return True

"""Bring the offline cluster up for the suites or the simulator, and down again.

`Cluster.start` runs the control plane with Karpenter's CRDs and, unless the engine installs the stack, HAMi's
scheduler, extender and webhook as Helm renders the HAMi chart from the running stack's release values (enough for
the objects scenarios). `Cluster.run_stack` then installs the running stack and starts KWOK, Karpenter, Prometheus and
the node agent: with `by_engine` (make e2e's scenarios) `pulumi up` of the stack in the existing-cluster mode, the
real engine and provider, HAMi then started from the objects Helm created; else the rig's own applier (make chaos,
make simulate, make try). `Cluster.stop` stops every process and keeps their logs, whatever happened.
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
from e2e.cluster.build import KUBERNETES_VERSION
from e2e.cluster.changes import Changes
from e2e.cluster.device_plugins import NvidiaPluginConfig
from e2e.cluster.engine import Engine, existing_cluster_records, existing_document
from e2e.cluster.errors import RigError
from e2e.cluster.hami_installed import MOCK_CONFIG_VOLUME, HamiInstalled, chart_deviations
from e2e.cluster.hami_values import HamiValues
from e2e.cluster.helm import chart_archive, charts_folder, render
from e2e.cluster.instance_types import kwok_instance_types
from e2e.cluster.kubectl import Kubectl, KubectlError
from e2e.cluster.node_agent import RIG_STACK_LABEL, NodeAgent
from e2e.cluster.rig import Rig, wait_for
from e2e.cluster.stack import Plan, feature_gates, for_rig
from e2e.cluster.tenants import Tenant
from e2e.cluster.workloads import Context, condition, install_running_stack
from gpushare import names
from gpushare.catalog import InstanceType, load_catalog

# The scenarios' stack holds about 470 resources; a file backend rewrites its whole state after every step (a
# checkpoint), which makes `pulumi up` quadratic in the stack's size. The rig's state lives for one run: save it once,
# at the end (pulumi/pulumi#10668).
SKIP_CHECKPOINTS = {"PULUMI_SKIP_CHECKPOINTS": "true"}


def say(message: str) -> None:
    print(f"e2e: {message}", file=sys.stderr, flush=True)


@dataclass
class Cluster:
    """The rig's processes for `plans`, HAMi configured from the `running` stack's release as its chart renders it."""

    bin_dir: Path
    work: Path
    plans: dict[str, Plan]
    running: str
    tenants: tuple[Tenant, ...] = ()
    # Install the running stack with `pulumi up` (the real engine) instead of the rig's applier.
    by_engine: bool = False
    rig: Rig = field(init=False)
    agent: NodeAgent | None = field(default=None, init=False)
    changes: Changes | None = field(default=None, init=False)
    # Per stack, HAMi as Helm renders its chart from the stack's release values, and the chart deviation if any.
    _hami: dict[str, tuple[HamiInstalled, str | None]] = field(default_factory=dict, init=False)
    # The running stack's device configs as Helm created them, once the engine installed the stack.
    _installed: DeviceConfigs | None = field(default=None, init=False)
    _installed_deviations: list[str] = field(default_factory=list, init=False)

    def __post_init__(self) -> None:
        # The charts' privileged pods (the NVIDIA device plugin's MPS daemon) need it, as EKS allows.
        self.rig = Rig(self.bin_dir, self.work, allow_privileged=self.by_engine)

    def start(self) -> Context:
        """The control plane, Karpenter's CRDs, HAMi's scheduler and webhook; the node agent built, not started."""
        say("starting etcd, kube-apiserver, kube-controller-manager, kube-scheduler")
        rig = self.rig
        rig.start_control_plane()
        kubectl = Kubectl(Path(rig.binary("kubectl")), rig.kubeconfig)
        apply_crds(rig, kubectl)
        wait_for("the default ServiceAccount", lambda: has_default_sa(kubectl), 60)
        plan = self.plans[self.running]
        hami = HamiValues.from_values(plan.helm_values[names.HAMI_RELEASE])
        nvidia_values = plan.helm_values.get(names.NVIDIA_PLUGIN_RELEASE)
        nvidia = NvidiaPluginConfig.from_values(nvidia_values) if nvidia_values is not None else None
        # With the engine, HAMi starts from what its Helm release created (run_stack); nothing needs it before.
        rendered = None if self.by_engine else self.rendered_hami(self.running)[0]
        if rendered is not None:
            say("starting HAMi's scheduler extender and webhook, and its kube-scheduler, as Helm renders its chart")
            _run_hami(rig, kubectl, rendered, helm_created=False)
        catalog = load_catalog()

        def start_node(node: str, itype: InstanceType, labels: dict[str, str]) -> None:
            stack = labels.get(RIG_STACK_LABEL, self.running)
            configs = self._installed if self._installed and stack == self.running else self._device_configs(stack)
            start_hami_node(rig, configs, node, itype)

        zeroed = (*hami.resource_names, names.GPU_SHARED)
        self.agent = NodeAgent(rig.api, catalog, zeroed, start_node, nvidia)
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
            rig=rig,
            hami_chart=rendered,
        )

    def run_stack(self, ctx: Context, left_out: Callable[[dict[str, Any]], bool] = lambda _obj: False) -> None:
        """The running stack installed as the rig runs it (but the objects `left_out` names), with KWOK, Karpenter
        (the stack's feature gates), Prometheus scraping Karpenter and HAMi, and the node agent playing the GPU
        nodes' kubelets."""
        rig = self.rig
        gates = feature_gates(ctx.plan)
        if self.by_engine:
            rig.start_kwok()
            self._install_by_engine(ctx, gates, left_out)
        else:
            install_running_stack(ctx, left_out)
            rig.start_kwok()
        say("starting Karpenter (kwok provider, the stack's feature gates) and Prometheus")
        instance_types = self.work / "instance-types.json"
        instance_types.write_text(json.dumps(kwok_instance_types(ctx.catalog), indent=1))
        rig.start_karpenter(instance_types, gates)
        ctx.restart_karpenter = lambda changed: _restart_karpenter(rig, instance_types, {**gates, **changed})
        rig.start_prometheus(prometheus.write_config(self.work, ctx.rendered_hami, ctx.plan))
        wait_for("Prometheus scraping Karpenter", prometheus.scraping_karpenter, 90, interval_s=1)
        hami_job = ctx.rendered_hami.service_name
        wait_for("Prometheus scraping HAMi's scheduler", lambda: prometheus.scraping(hami_job), 90, interval_s=1)
        ctx.agent.start()

    def _install_by_engine(
        self, ctx: Context, gates: dict[str, str], left_out: Callable[[dict[str, Any]], bool]
    ) -> None:
        """`pulumi up` of the running stack's file in the existing-cluster mode (the rig's Karpenter the existing
        one, its deviations as the engine program's transforms), the objects `left_out` names deleted again before
        Karpenter starts, then HAMi's processes from the objects Helm created."""
        ctx.kubectl.apply(existing_cluster_records(gates))
        engine = Engine(self.bin_dir, self.rig.kubeconfig, ctx.started, directory=self.work / "engine")
        engine.prepare(existing_document(ctx.plan.source, gates, charts_folder()))
        say(f"pulumi up of the {self.running} stack in the existing-cluster mode ({engine.version()})")
        outcome = engine.must("up", "--yes", "--skip-preview", extra=SKIP_CHECKPOINTS)
        say(f"pulumi up created the stack in {outcome.seconds:.0f} s")
        unwanted = [for_rig(obj, ctx.started) for obj in ctx.plan.objects if left_out(obj)]
        if unwanted:
            ctx.kubectl.delete(unwanted)
        say("starting HAMi's scheduler extender and webhook, and its kube-scheduler, from the objects Helm created")
        ctx.hami_chart, self._installed = start_installed_hami(self.rig, ctx.kubectl)
        self._installed_deviations = chart_deviations(ctx.kubectl)

    def rendered_hami(self, stack: str) -> tuple[HamiInstalled, str | None]:
        """HAMi as `helm template` renders the stack's HAMi release from its chart archive, and the deviation when the
        archives folder holds another version than the plan's (rendered once per stack)."""
        if stack not in self._hami:
            plan = self.plans[stack]
            chart, version = plan.charts[names.HAMI_RELEASE]
            archive = chart_archive(chart, version)
            objects = render(
                Path(self.rig.binary("helm")),
                names.HAMI_RELEASE,
                names.HAMI_NAMESPACE,
                archive.path,
                plan.helm_values[names.HAMI_RELEASE],
                KUBERNETES_VERSION,
                self.rig.hami_dir / stack,
            )
            self._hami[stack] = (HamiInstalled.rendered(objects, mock_device_config(plan, objects)), archive.deviation)
        return self._hami[stack]

    def chart_deviations(self) -> list[str]:
        """A line per chart installed (by the engine) or rendered (HAMi's, for the applier) from another version
        than its stack's pin."""
        if self.by_engine:
            return self._installed_deviations
        return sorted({deviation for _, deviation in self._hami.values() if deviation})

    def _device_configs(self, stack: str) -> DeviceConfigs:
        """The device configs the stack's HAMi release and its mock DaemonSet render, written on first use (the
        running stack's HAMi config is the one HAMi's scheduler reads; a scenario may add a plan of its own)."""
        directory = self.rig.hami_dir / stack
        configs = DeviceConfigs(directory / "device-config.yaml", directory / "mock-device-config.yaml")
        if not configs.mock.exists():
            hami, _ = self.rendered_hami(stack)
            configs.hami.write_text(yaml.safe_dump(hami.device_config))
            configs.mock.write_text(hami.mock_device_config)
        return configs

    def stop(self, keep_logs: Path) -> None:
        """Stop every process this cluster started; their logs are kept in `keep_logs` (which GPU HAMi chose, why a
        pod stayed pending), the data directories (etcd, TSDB) go."""
        if self.changes is not None:
            self.changes.stop()
        if self.agent is not None and self.agent.is_alive():
            self.agent.stop()
        self.rig.stop()
        engine_log = self.work / "engine" / "engine.log"
        if engine_log.exists() and self.rig.log_dir.exists():
            shutil.copy(engine_log, self.rig.log_dir / "pulumi-up.log")
        shutil.rmtree(keep_logs, ignore_errors=True)
        if self.rig.log_dir.exists():
            shutil.copytree(self.rig.log_dir, keep_logs)
        shutil.rmtree(self.work, ignore_errors=True)


def apply_crds(rig: Rig, kubectl: Kubectl) -> None:
    for writer in ("aws-crds", "kwok-crds"):
        kubectl.apply_stream(subprocess.run([rig.binary(writer)], check=True, capture_output=True, text=True).stdout)
    # Not `kubectl wait --for=condition=Established crd --all`: it fails at once, instead of waiting, on a CRD whose
    # status the API server has not written yet (".status.conditions accessor error: <nil>"), as a fast machine's
    # first run of CI did.
    wait_for("every CRD Established", lambda: established(json.loads(kubectl.run("get", "crd", "-o", "json"))), 60)


def established(crds: dict[str, Any]) -> bool:
    """Whether every CRD of a `kubectl get crd -o json` list has the condition Established=True (one the API server
    has not looked at yet has no status)."""
    return all(condition(crd, "Established").get("status") == "True" for crd in crds["items"])


def _restart_karpenter(rig: Rig, instance_types: Path, gates: dict[str, str]) -> None:
    rig.stop_process("karpenter")
    rig.start_karpenter(instance_types, gates)
    wait_for("Karpenter serving metrics again", prometheus.scraping_karpenter, 90, interval_s=1)


def _run_hami(rig: Rig, kubectl: Kubectl, hami: HamiInstalled, helm_created: bool) -> None:
    """HAMi's scheduler and its kube-scheduler as processes, and its MutatingWebhookConfiguration (the one Helm
    created replaced, else applied) pointed at the extender on loopback with the rig's certificate (the rig has no
    Service routing)."""
    cert = rig.start_installed_hami(hami)
    url = f"https://127.0.0.1:{hami.extender_port}/webhook"
    webhook = hami.patched_webhook(url, base64.b64encode(cert.read_bytes()).decode())
    if helm_created:
        kubectl.run("replace", "-f", "-", objects=[webhook])
    else:
        kubectl.apply([webhook])
    wait_for("HAMi's scheduler extender serving", lambda: _serving_at(rig, hami.extender_port, hami.serves_tls), 90)


def start_installed_hami(rig: Rig, kubectl: Kubectl) -> tuple[HamiInstalled, DeviceConfigs]:
    """HAMi's scheduler and its kube-scheduler started from the objects Helm created (e2e.cluster.hami_installed);
    the device configs the GPU nodes' plugins read, written from the same objects."""
    hami = HamiInstalled.read(kubectl)
    _run_hami(rig, kubectl, hami, helm_created=True)
    directory = rig.hami_dir / "installed"
    directory.mkdir(parents=True, exist_ok=True)
    configs = DeviceConfigs(directory / "device-config.yaml", directory / "mock-device-config.yaml")
    configs.hami.write_text(yaml.safe_dump(hami.device_config))
    configs.mock.write_text(hami.mock_device_config)
    return hami, configs


def _serving_at(rig: Rig, port: int, tls_on: bool) -> bool:

    if not rig.alive("hami-scheduler"):
        raise RigError(f"hami-scheduler exited; see {rig.log_dir / 'hami-scheduler.log'}")
    tls = ssl.create_default_context()
    tls.check_hostname = False
    tls.verify_mode = ssl.CERT_NONE
    scheme = "https" if tls_on else "http"
    try:
        with urllib.request.urlopen(f"{scheme}://127.0.0.1:{port}/healthz", context=tls, timeout=5):
            return True
    except OSError:
        return False


@dataclass(frozen=True)
class DeviceConfigs:
    """A stack's device config files: HAMi's (its scheduler and device plugin read it) and the mock's."""

    hami: Path
    mock: Path


def mock_device_config(plan: Plan, chart_objects: list[dict[str, Any]]) -> str:
    """The device-config.yaml the stack's mock DaemonSet mounts: a ConfigMap of the plan's, or one the HAMi chart
    renders (its own device ConfigMap)."""
    [daemonset] = [d for d in plan.of_kind("DaemonSet") if d["metadata"]["name"] == names.MOCK_NAME]
    spec = daemonset["spec"]["template"]["spec"]
    [volume] = [v for v in spec["volumes"] if "configMap" in v and v["name"] == MOCK_CONFIG_VOLUME]
    name = volume["configMap"]["name"]
    namespace = daemonset["metadata"]["namespace"]
    for configmap in [*plan.of_kind("ConfigMap"), *(o for o in chart_objects if o["kind"] == "ConfigMap")]:
        if (configmap["metadata"]["name"], configmap["metadata"].get("namespace", namespace)) == (name, namespace):
            return str(configmap["data"][names.HAMI_DEVICE_CONFIG_KEY])
    raise RigError(f"the mock device plugin of {plan.stack} mounts ConfigMap {namespace}/{name}, which nothing renders")


def start_hami_node(rig: Rig, configs: DeviceConfigs, node: str, itype: InstanceType) -> None:
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


def has_default_sa(kubectl: Kubectl) -> bool:
    try:
        kubectl.run("get", "serviceaccount", "default", "-n", "default")
    except KubectlError:
        return False
    return True

"""HAMi read from the objects Helm created: the containers' command lines with their mounted files, Helm's release
records, and the change the engine phase makes to the stack file."""

from __future__ import annotations

import base64
import gzip
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from e2e.cluster.engine import existing_document
from e2e.cluster.errors import RigError
from e2e.cluster.hami_installed import Container, HamiInstalled, installed_charts
from e2e.cluster.stack import stack_file
from e2e.suites.engine import CHANGED_QUOTA_MIB, LIMITED_POOL, PROBE_MIB, QUOTA_TEAM, _change_pool_and_quota
from gpushare import names

DEVICE_CONFIG = {
    "nvidia": {
        "resourceCountName": "example.com/gpu",
        "resourceMemoryName": "example.com/gpumem",
        "resourceCoreName": "example.com/gpucores",
        "resourceMemoryPercentageName": "example.com/gpumem-percentage",
    }
}
SCHEDULER_CONFIG = {"kind": "KubeSchedulerConfiguration", "profiles": [{"schedulerName": "other-scheduler"}]}


def _record(chart: str, version: str, manifest: list[dict[str, Any]]) -> str:
    """A release as Helm's storage Secret holds it: the Secret's data is base64 of base64 of the gzipped JSON."""
    body = {"chart": {"metadata": {"name": chart, "version": version}}, "manifest": yaml.safe_dump_all(manifest)}
    inner = base64.b64encode(gzip.compress(json.dumps(body).encode()))
    return base64.b64encode(inner).decode()


class FakeKubectl:
    """`kubectl get ... -o json` answered from a dict of (kind, name) -> object."""

    def __init__(self, objects: dict[tuple[str, str], dict[str, Any]], secrets: list[dict[str, Any]]) -> None:
        self.objects, self.secrets = objects, secrets

    def run(self, *args: str, **_kwargs: Any) -> str:
        kind, rest = args[1], args[2:]
        if kind == "secrets":
            selector = rest[rest.index("-l") + 1]
            wanted = dict(part.split("=") for part in selector.split(","))
            items = [s for s in self.secrets if wanted.items() <= {**s["metadata"]["labels"]}.items()]
            return json.dumps({"items": items})
        return json.dumps(self.objects[(kind, rest[0])])


def _secret(release: str, namespace: str, revision: int, chart: str, version: str, manifest: list[dict]) -> dict:
    labels = {"owner": "helm", "name": release, "status": "deployed", "version": str(revision)}
    metadata = {"name": f"sh.helm.release.v1.{release}.v{revision}", "namespace": namespace, "labels": labels}
    return {"metadata": metadata, "data": {"release": _record(chart, version, manifest)}}


def _cluster(extender_command: list[str]) -> FakeKubectl:
    containers = [
        {
            "name": "kube-scheduler",
            "command": ["kube-scheduler", "--config=/config/config.yaml", "-v=4"],
            "volumeMounts": [{"name": "scheduler-config", "mountPath": "/config"}],
        },
        {
            "name": "vgpu-scheduler-extender",
            "command": extender_command,
            "env": [
                {"name": "HAMI_NODELOCK_EXPIRE", "value": "5m"},
                {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
            ],
            "volumeMounts": [
                {"name": "device-config", "mountPath": "/device-config.yaml", "subPath": "device-config.yaml"},
                {"name": "tls-config", "mountPath": "/tls"},
            ],
        },
    ]
    volumes = [
        {"name": "scheduler-config", "configMap": {"name": "sched"}},
        {"name": "device-config", "configMap": {"name": "sched-device"}},
        {"name": "tls-config", "secret": {"secretName": "sched-tls"}},
    ]
    deployment = {
        "kind": "Deployment",
        "metadata": {"name": "sched", "namespace": names.HAMI_NAMESPACE},
        "spec": {
            "template": {
                "metadata": {"labels": {"app": "hami", "component": "scheduler"}},
                "spec": {"containers": containers, "volumes": volumes},
            }
        },
    }
    service = {
        "kind": "Service",
        "metadata": {"name": "sched", "namespace": names.HAMI_NAMESPACE},
        "spec": {
            "selector": {"component": "scheduler"},
            "ports": [{"name": "http", "port": 443, "targetPort": 443}, {"name": "monitor", "port": 31993}],
        },
    }
    # The device plugin's Service, beside it in the release: it selects other Pods.
    plugin_service = {
        "kind": "Service",
        "metadata": {"name": "plugin", "namespace": names.HAMI_NAMESPACE},
        "spec": {"selector": {"component": "device-plugin"}, "ports": [{"name": "monitor", "port": 31992}]},
    }
    webhook = {
        "kind": "MutatingWebhookConfiguration",
        "metadata": {"name": "hook"},
        "webhooks": [{"name": "vgpu.hami.io", "clientConfig": {"service": {"name": "sched", "port": 443}}}],
    }
    mock = {"spec": {"template": {"spec": {"volumes": [{"name": "device-config", "configMap": {"name": "mock-cm"}}]}}}}
    objects = {
        ("deployment", "sched"): deployment,
        ("mutatingwebhookconfiguration", "hook"): webhook,
        ("service", "sched"): service,
        ("service", "plugin"): plugin_service,
        ("configmap", "sched"): {"data": {"config.yaml": yaml.safe_dump(SCHEDULER_CONFIG)}},
        ("configmap", "sched-device"): {"data": {"device-config.yaml": yaml.safe_dump(DEVICE_CONFIG)}},
        ("configmap", "mock-cm"): {"data": {names.HAMI_DEVICE_CONFIG_KEY: "mock: config\n"}},
        ("daemonset", names.MOCK_NAME): mock,
    }
    manifest = [deployment, webhook, service, plugin_service, {"kind": "ConfigMap", "metadata": {"name": "sched"}}]
    secrets = [
        _secret(names.HAMI_RELEASE, names.HAMI_NAMESPACE, 1, "hami", "2.9.0", manifest),
        _secret(names.HAMI_RELEASE, names.HAMI_NAMESPACE, 2, "hami", "2.10.0", manifest),
        _secret("plugin", "other", 1, "nvidia-device-plugin", "0.20.0", []),
    ]
    return FakeKubectl(objects, secrets)


EXTENDER = [
    "scheduler",
    "--http_bind=0.0.0.0:443",
    "--cert_file=/tls/tls.crt",
    "--key_file=/tls/tls.key",
    "--scheduler-name=other-scheduler",
    "--metrics-bind-address=:9395",
    "--device-config-file=/device-config.yaml",
    "--debug",
]


def test_hami_is_read_from_the_objects_its_release_record_names() -> None:
    hami = HamiInstalled.read(_cluster(EXTENDER))  # type: ignore[arg-type]
    assert (hami.scheduler_name, hami.extender_port, hami.serves_tls) == ("other-scheduler", 443, True)
    assert hami.resource_names == (
        "example.com/gpu",
        "example.com/gpumem",
        "example.com/gpucores",
        "example.com/gpumem-percentage",
    )
    assert hami.device_config == DEVICE_CONFIG and hami.scheduler_configuration == SCHEDULER_CONFIG
    assert hami.mock_device_config == "mock: config\n"
    # Only the literal env: what a Pod takes from its fieldRefs has no value outside one.
    assert hami.extender.env == {"HAMI_NODELOCK_EXPIRE": "5m"}


def test_hami_rendered_by_helm_is_read_as_installed_hami_is() -> None:
    cluster = _cluster(EXTENDER)
    # helm template's output: the release's objects as written, its ConfigMaps among them.
    kinds = ("deployment", "service", "mutatingwebhookconfiguration")
    rendered = [obj for (kind, _), obj in cluster.objects.items() if kind in kinds]
    rendered += [
        {"kind": "ConfigMap", "metadata": {"name": name}, **obj}
        for (kind, name), obj in cluster.objects.items()
        if kind == "configmap" and name != "mock-cm"
    ]
    installed, from_helm = HamiInstalled.read(cluster), HamiInstalled.rendered(rendered, "mock: config\n")  # type: ignore[arg-type]
    assert from_helm == installed
    assert (from_helm.metrics_port, from_helm.service_name, from_helm.service_target_port("http")) == (
        9395,
        "sched",
        443,
    )
    with pytest.raises(RigError, match="no ConfigMap sched-device"):
        HamiInstalled.rendered([obj for obj in rendered if obj["metadata"]["name"] != "sched-device"], "")


def test_a_service_port_is_the_container_port_it_targets() -> None:
    hami = HamiInstalled.read(_cluster(EXTENDER))  # type: ignore[arg-type]
    assert hami.service_target_port("monitor") == 31993  # no targetPort: the port itself
    with pytest.raises(RigError, match="has no port metrics"):
        hami.service_target_port("metrics")


def test_the_extender_runs_on_plain_http_when_its_deployment_says_so() -> None:
    plain = [arg for arg in EXTENDER if not arg.startswith(("--cert_file", "--key_file"))]
    plain[1] = "--http_bind=0.0.0.0:80"
    hami = HamiInstalled.read(_cluster(plain))  # type: ignore[arg-type]
    assert (hami.extender_port, hami.serves_tls) == (80, False)


def test_mounted_files_are_written_and_the_command_line_follows_them(tmp_path: Path) -> None:
    hami = HamiInstalled.read(_cluster(EXTENDER))  # type: ignore[arg-type]
    args = hami.extender.materialize(tmp_path)
    assert f"--device-config-file={tmp_path}/device-config.yaml" in args
    assert f"--cert_file={tmp_path}/tls/tls.crt" in args and "--debug" in args
    assert yaml.safe_load((tmp_path / "device-config.yaml").read_text()) == DEVICE_CONFIG
    scheduler = hami.kube_scheduler.materialize(tmp_path / "ks")
    assert scheduler == [f"--config={tmp_path}/ks/config/config.yaml", "-v=4"]
    assert yaml.safe_load((tmp_path / "ks" / "config" / "config.yaml").read_text()) == SCHEDULER_CONFIG


def test_a_path_outside_every_mount_is_left_as_it_is(tmp_path: Path) -> None:
    container = Container(("x", "--config=/configs/a", "--file=/config"), {}, {"/config": "c"}, {})
    assert container.materialize(tmp_path) == ["--config=/configs/a", f"--file={tmp_path}/config"]


def test_the_webhook_reaches_the_extender_where_the_rig_serves_it() -> None:
    hami = HamiInstalled.read(_cluster(EXTENDER))  # type: ignore[arg-type]
    patched = hami.patched_webhook("https://127.0.0.1:443/webhook", "Q0E=")
    assert patched["webhooks"][0]["clientConfig"] == {"url": "https://127.0.0.1:443/webhook", "caBundle": "Q0E="}
    assert "service" in hami.webhook["webhooks"][0]["clientConfig"]


def test_a_release_without_the_scheduler_deployment_is_refused() -> None:
    cluster = _cluster(EXTENDER)
    cluster.secrets = [_secret(names.HAMI_RELEASE, names.HAMI_NAMESPACE, 1, "hami", "2.10.0", [])]
    with pytest.raises(RigError, match="not exactly one scheduler Deployment"):
        HamiInstalled.read(cluster)  # type: ignore[arg-type]


def test_installed_charts_are_the_newest_deployed_revisions() -> None:
    assert installed_charts(_cluster(EXTENDER)) == {  # type: ignore[arg-type]
        names.HAMI_RELEASE: ("hami", "2.10.0"),
        "plugin": ("nvidia-device-plugin", "0.20.0"),
    }


def test_the_change_raises_one_pools_limit_and_lowers_a_quota_below_the_probe(tmp_path: Path) -> None:
    document = existing_document(stack_file("dev"), {"NodeOverlay": "true"}, tmp_path)
    config = document["config"]
    [pool] = [p for p in config["gpushare:pools"] if p["name"] == LIMITED_POOL]
    [team] = [t for t in config["gpushare:teams"] if t["name"] == QUOTA_TEAM]
    before = (pool["maxGpus"], team["quota"]["gpuMemoryMib"])
    _change_pool_and_quota(config)
    assert (pool["maxGpus"], team["quota"]["gpuMemoryMib"]) == (before[0] + 1, CHANGED_QUOTA_MIB)
    # The probe fits the team's quota before the change and not after.
    assert CHANGED_QUOTA_MIB < PROBE_MIB <= before[1]

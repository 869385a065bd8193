"""Monitoring: config, rendered releases and objects, the pure checks the policy pack uses, and wiring."""

from __future__ import annotations

import json

import pytest
import yaml

from gpushare import compat, images, names, pins
from gpushare.errors import ConfigError
from gpushare.images import UPSTREAM_REGISTRIES as UPSTREAM
from gpushare.loader import load_stack_config
from gpushare.metrics import metric_catalog
from gpushare.render import alerts, monitoring
from policies.gpushare_policies.rules.monitoring_skips_eks_control_plane import hidden_components_scraped
from policies.gpushare_policies.rules.monitoring_webui_reads_hami_metrics import webui_compatible
from tests.conftest import PLAN_DATE, ROOT, raw_stack
from tests.test_main import by_type, one, urn

HELM = "kubernetes:helm.sh/v3:Release"
MONITORING_DOC = (ROOT / "docs" / "monitoring.md").read_text()


def test_off_by_default_and_in_dev_on_in_prod(dev, prod):
    assert not dev.monitoring.enabled
    assert monitoring.monitoring_releases(dev) == [] and monitoring.monitoring_objects(dev) == []
    assert prod.monitoring.enabled


@pytest.mark.parametrize(
    ("field", "value", "key"),
    [
        ("retention", "15 days", "gpushare:monitoring.retention"),
        ("storageSize", "100GB", "gpushare:monitoring.storageSize"),
        ("alerts", {"quotaUsePercent": 150}, "gpushare:monitoring.alerts.quotaUsePercent"),
        ("alerts", {"nodeIdleMinutes": 1}, "gpushare:monitoring.alerts.nodeIdleMinutes"),
        ("existingPrometheus", {"url": "prometheus:9090"}, "gpushare:monitoring.existingPrometheus.url"),
        ("scrapeInterval", "30s", "gpushare:monitoring.scrapeInterval"),
    ],
)
def test_bad_monitoring_config_names_the_key(prod_raw, field, value, key):
    prod_raw["gpushare:monitoring"][field] = value
    with pytest.raises(ConfigError) as error:
        load_stack_config(prod_raw, today=PLAN_DATE)
    assert str(error.value).startswith(key)


def test_prod_deploys_three_pinned_releases_on_system_nodes(prod):
    releases = {r.name: r for r in monitoring.monitoring_releases(prod)}
    assert set(releases) == {names.MONITORING_RELEASE, names.DCGM_RELEASE, names.WEBUI_RELEASE}
    system = {names.SYSTEM_ROLE_LABEL: names.SYSTEM_ROLE}
    kps = releases[names.MONITORING_RELEASE].values
    assert kps["prometheus"]["prometheusSpec"]["nodeSelector"] == system
    assert kps["prometheus"]["prometheusSpec"]["retention"] == prod.monitoring.retention
    volume = kps["prometheus"]["prometheusSpec"]["storageSpec"]["volumeClaimTemplate"]["spec"]
    assert volume["resources"]["requests"]["storage"] == prod.monitoring.storage_size
    webui = releases[names.WEBUI_RELEASE].values
    assert webui["nodeSelector"] == system and webui["service"]["type"] == "ClusterIP"
    assert webui["externalPrometheus"] == {
        "enabled": True,
        "address": f"http://{names.MONITORING_RELEASE}-prometheus.{names.MONITORING_NAMESPACE}.svc:9090",
    }
    assert all(r.version and r.repository for r in releases.values())


def with_existing_prometheus(raw, existing):
    """The stack's monitoring on an existing Prometheus: the keys of the stack's own Prometheus and Alertmanager (an
    existing Prometheus keeps and routes its own way) are refused beside it."""
    for key in ("alertReceiver", "retention", "storageSize", "storageClass"):
        raw["gpushare:monitoring"].pop(key, None)
    raw["gpushare:monitoring"]["existingPrometheus"] = existing
    return raw


def test_existing_prometheus_gets_only_labelled_objects(prod_raw):
    with_existing_prometheus(
        prod_raw, {"url": "http://prometheus.observability.svc:9090", "labels": {"release": "platform"}}
    )
    config = load_stack_config(prod_raw, today=PLAN_DATE)
    releases = {r.name: r for r in monitoring.monitoring_releases(config)}
    assert names.MONITORING_RELEASE not in releases
    assert (
        releases[names.WEBUI_RELEASE].values["externalPrometheus"]["address"]
        == config.monitoring.existing_prometheus.url
    )
    assert releases[names.DCGM_RELEASE].values["serviceMonitor"]["additionalLabels"] == {"release": "platform"}
    for obj in monitoring.monitoring_objects(config)[1:]:
        assert obj["metadata"]["labels"]["release"] == "platform", obj["metadata"]["name"]


def test_webui_compatibility_follows_the_hami_metric_rename():
    assert webui_compatible("2.8.3", "1.1.0")
    assert webui_compatible("2.7.1", "1.1.0")
    assert not webui_compatible("2.9.0", "1.1.0")
    assert not webui_compatible("2.8.3", "1.2.0")
    assert webui_compatible("2.9.0", "1.2.0")
    assert webui_compatible("2.10.0", "1.2.0")
    assert not webui_compatible("2.10.0", "1.3.0"), "a WebUI whose queries were not read pairs with nothing"


def test_hami_series_keep_their_own_node_namespace_and_pod(prod):
    """HAMi >= 2.9 labels series with the GPU's node and the workload's namespace and pod: scraped with
    honorLabels, and the scheduler's `node` not overwritten by the node its pod runs on."""
    monitors = {m["metadata"]["name"]: m["spec"]["endpoints"][0] for m in monitoring.service_monitors(prod)}
    for name in ("hami-scheduler", "hami-device-plugin"):
        assert monitors[name]["honorLabels"] is True
    assert "relabelings" not in monitors["hami-scheduler"]
    assert monitors["hami-device-plugin"]["relabelings"] == [monitoring.NODE_FROM_POD]
    assert "honorLabels" not in monitors[names.WEBUI_RELEASE] and "honorLabels" not in monitors["karpenter"]


def test_shipped_webui_fits_every_hami_chart_the_config_allows_with_monitoring(prod):
    assert webui_compatible(prod.hami.chart_version, pins.chart_version(names.WEBUI_CHART))


def test_every_monitoring_image_is_pinned_and_upstream(prod):
    for release in monitoring.monitoring_releases(prod):
        for image in images.release_images(release.chart, release.values):
            assert images.provenance_problem(image.reference) is None, (release.name, image)
            assert images.pin_problem(image.tag, image.digest) is None, (release.name, image)
    defaults = images.release_images(names.WEBUI_CHART, {"service": {"type": "ClusterIP"}})
    assert [(i.path, i.tag) for i in defaults] == [("image.frontend", "main"), ("image.backend", "main")]
    certgen = images.release_images(names.KUBE_PROMETHEUS_STACK_CHART, {})
    assert any(images.provenance_problem(i.reference) for i in certgen)  # the chart's default is a fork


def test_exporter_runs_on_tainted_gpu_pools_only(prod):
    """Where the rendered values put the exporter, as the pack computes it from the chart's defaults."""
    from gpushare.render.karpenter import pool_labels
    from policies.gpushare_policies.placement import gpu_daemonsets
    from policies.gpushare_policies.stack import HELM_RELEASE, Resource, StackView

    def exporter(values):
        release = Resource("urn:dcgm", HELM_RELEASE, names.DCGM_RELEASE, {"chart": names.DCGM_CHART, "values": values})
        return gpu_daemonsets(StackView((release,), PLAN_DATE))[0]

    values = monitoring.dcgm_exporter_values(prod)
    gpu_taints = (dict(names.GPU_TAINT),)
    system = {names.SYSTEM_ROLE_LABEL: names.SYSTEM_ROLE}
    for pool in prod.pools:
        assert exporter(values).blocker(pool_labels(pool), gpu_taints) is None, pool.name
    assert exporter(values).blocker(system, ()) is not None
    untolerated = {key: value for key, value in values.items() if key != "tolerations"}  # the chart's control-plane one
    assert exporter(untolerated).blocker(pool_labels(prod.pools[0]), gpu_taints)[0] == "values.tolerations"
    assert exporter({**values, "affinity": {}}).blocker(system, ()) is None  # `{}` over the chart's `{}`: none


def test_every_gpu_pool_node_carries_the_label_the_exporter_requires(prod):
    from gpushare.render.karpenter import pool_labels

    for pool in prod.pools:
        assert names.SHARING_LABEL in pool_labels(pool)


def test_dashboard_is_a_sidecar_configmap_with_every_panel_documented(prod):
    configmap = monitoring.dashboard_configmap(prod)
    assert configmap["metadata"]["labels"] == {monitoring.DASHBOARD_LABEL[0]: monitoring.DASHBOARD_LABEL[1]}
    dashboard = json.loads(configmap["data"]["gpushare-gpus.json"])
    assert len({p["id"] for p in dashboard["panels"]}) == len(dashboard["panels"]) == len(alerts.panels(prod))
    for panel in dashboard["panels"]:
        assert panel["targets"] and all(t["expr"] for t in panel["targets"])
        assert f"| {panel['title']} |" in MONITORING_DOC, f"docs/monitoring.md lacks panel {panel['title']!r}"


def test_monitoring_is_wired_after_the_cluster_and_scraped_releases(plans):
    plan = plans["prod"]
    kps = one(plan, HELM, names.MONITORING_RELEASE)
    namespace = urn(plan, "kubernetes:core/v1:Namespace", f"namespace-{names.MONITORING_NAMESPACE}")
    assert namespace in kps["dependencies"] and urn(plan, HELM, names.HAMI_RELEASE) in kps["dependencies"]
    for name in (names.DCGM_RELEASE, names.WEBUI_RELEASE):
        assert kps["urn"] in one(plan, HELM, name)["dependencies"], name
    for token in (
        "kubernetes:monitoring.coreos.com/v1:ServiceMonitor",
        "kubernetes:monitoring.coreos.com/v1:PrometheusRule",
    ):
        for resource in by_type(plan, token):
            assert kps["urn"] in resource["dependencies"], resource["name"]
            assert resource["parent"].endswith("gpushare:index:Monitoring::monitoring")
    assert not [r for r in plans["dev"]["resources"] if r["type"] == "gpushare:index:Monitoring"]


def test_every_monitoring_value_key_was_verified_in_the_pinned_chart(prod_raw):
    mirrored = {**raw_stack("prod"), "gpushare:registryMirrors": {r: f"mirror.example.com/{r}" for r in UPSTREAM}}
    with_existing_prometheus(prod_raw, {"url": "http://prom.obs.svc:9090", "labels": {"a": "b"}})
    for config in (
        load_stack_config(raw_stack("prod"), today=PLAN_DATE),
        load_stack_config(prod_raw, today=PLAN_DATE),
        load_stack_config(mirrored, today=PLAN_DATE),
    ):
        for release in monitoring.monitoring_releases(config):
            assert monitoring.unverified_value_keys(release.chart, release.version, release.values) == [], release.name
    assert monitoring.unverified_value_keys(
        names.DCGM_CHART, pins.chart_version(names.DCGM_CHART), {"nodeSelector": {"a": "b"}}
    ) == ["nodeSelector.a"]
    assert monitoring.unverified_value_keys(names.DCGM_CHART, "9.9.9", {"image": {"tag": "x"}}) == ["image.tag"]


def _webui_fixture_series() -> list[str]:
    fixtures = yaml.safe_load(alerts.RULES_TEST_PATH.read_text())
    [group] = [test for test in fixtures["tests"] if "promql_expr_test" in test]
    return [series["series"] for series in group["input_series"]]


def _labels(series: str) -> dict[str, str]:
    body = series[series.index("{") + 1 : series.rindex("}")]
    return dict((key.strip(), value.strip('"')) for key, value in (pair.split("=", 1) for pair in body.split('", ')))


def test_webui_fixture_carries_the_labels_the_rendered_service_monitor_gives(prod):
    """The promtool test of the WebUI's queries (rules-test.yaml) feeds series labelled as our ServiceMonitor
    scrapes them: a monitor that moved port or namespace, or relabeled a label the backend exports, fails here."""
    [monitor] = [m for m in monitoring.service_monitors(prod) if m["metadata"]["name"] == names.WEBUI_RELEASE]
    [endpoint] = monitor["spec"]["endpoints"]
    exported = set(metric_catalog()["hami-webui"]["labels"])
    assert not {r.get("targetLabel") for r in endpoint.get("relabelings", [])} & exported
    for series in _webui_fixture_series():
        labels = _labels(series)
        assert series.split("{")[0] in metric_catalog()["hami-webui"]["metrics"]
        assert labels["job"] == labels["service"] == names.WEBUI_RELEASE
        assert labels["namespace"] == monitor["spec"]["namespaceSelector"]["matchNames"][0]
        assert labels["endpoint"] == endpoint["port"]
        assert (
            "node" in labels
            and set(labels) - {"job", "service", "namespace", "endpoint", "pod", "container", "instance"} <= exported
        )


def test_webui_service_monitor_selects_the_chart_service(prod):
    [monitor] = [m for m in monitoring.service_monitors(prod) if m["metadata"]["name"] == names.WEBUI_RELEASE]
    assert monitor["spec"]["selector"]["matchLabels"] == {
        "app.kubernetes.io/name": names.WEBUI_CHART,
        "app.kubernetes.io/instance": names.WEBUI_RELEASE,
        "app.kubernetes.io/component": names.WEBUI_CHART,
    }
    # The chart's own monitors stay off: ours scrapes the backend, a second device-plugin monitor would double it.
    values = monitoring.webui_values(prod)
    assert values["serviceMonitor"] == values["hamiServiceMonitor"] == {"enabled": False}


def test_kube_prometheus_stack_scrapes_nothing_eks_hides(prod):
    values = monitoring.kube_prometheus_stack_values(prod)
    assert hidden_components_scraped(values) == []
    assert hidden_components_scraped({}) == list(compat.KPS_COMPONENTS_EKS_HIDES)


def test_exporter_attributes_time_sliced_gpus_to_pods(prod):
    env = monitoring.dcgm_exporter_values(prod)["extraEnv"]
    assert {"name": "NVIDIA_RESOURCE_NAMES", "value": names.GPU_SHARED} in env

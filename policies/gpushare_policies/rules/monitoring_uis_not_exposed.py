"""No monitoring UI without a login of its own sits behind a LoadBalancer Service."""

from __future__ import annotations

from collections.abc import Iterator

from gpushare import names

from ..rule import Finding, Rule, finding
from ..stack import Resource, StackView

LOAD_BALANCER = "LoadBalancer"
# (chart, values path of the UI's Service type, what it is). Prometheus and Alertmanager have no login;
# HAMi-WebUI has none and will not get one (Project-HAMi/HAMi-WebUI #27: access control belongs in a gateway).
NO_LOGIN = (
    (names.KUBE_PROMETHEUS_STACK_CHART, ("prometheus", "service", "type"), "Prometheus (no login)"),
    (names.KUBE_PROMETHEUS_STACK_CHART, ("alertmanager", "service", "type"), "Alertmanager (no login)"),
    (names.WEBUI_CHART, ("service", "type"), "HAMi-WebUI (no login)"),
)
GRAFANA_SERVICE = ("grafana", "service", "type")
GRAFANA_ANONYMOUS = ("grafana", "grafana.ini", "auth.anonymous", "enabled")


def _exposed(release: Resource, chart: str) -> Iterator[tuple[tuple[str, ...], str]]:
    """(values path of the Service type, what it exposes) for each UI without a login on a load balancer."""
    for ui_chart, path, what in NO_LOGIN:
        if ui_chart == chart and release.get("values", *path) == LOAD_BALANCER:
            yield path, what
    anonymous = release.get("values", *GRAFANA_ANONYMOUS) in (True, "true")
    grafana_exposed = release.get("values", *GRAFANA_SERVICE) == LOAD_BALANCER
    if chart == names.KUBE_PROMETHEUS_STACK_CHART and grafana_exposed and anonymous:
        yield GRAFANA_SERVICE, "Grafana with anonymous access (values.grafana.grafana.ini.auth.anonymous.enabled)"


def check_uis_not_exposed(view: StackView, _config: None) -> Iterator[Finding]:
    for chart in (names.KUBE_PROMETHEUS_STACK_CHART, names.WEBUI_CHART):
        for release, (path, what) in ((r, e) for r in view.releases(chart) for e in _exposed(r, chart)):
            yield finding(
                release,
                "values." + ".".join(path),
                LOAD_BALANCER,
                f"{what} on a load balancer: whoever reaches its address reads every GPU metric and workload name "
                "of the cluster (and Prometheus's admin and query API) without signing in",
                "keep it ClusterIP and use kubectl port-forward, or put an authenticating proxy or ingress in front",
            )


RULE = Rule(
    name="monitoring-uis-not-exposed",
    order=67,
    description="Prometheus, Alertmanager, HAMi-WebUI and an anonymous Grafana are not on a LoadBalancer Service.",
    why="None of them asks who you are: a load balancer hands the cluster's metrics, workload names and Prometheus's "
    "query API to anyone who reaches it.",
    remediation="Keep the UIs ClusterIP (gpushare does) and reach them by port-forward or an authenticating proxy.",
    enforcement="mandatory",
    severity="high",
    check=check_uis_not_exposed,
)

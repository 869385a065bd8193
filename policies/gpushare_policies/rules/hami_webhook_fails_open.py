"""HAMi's mutating webhook fails open.

The webhook of charts 2.8.3 and 2.10.0 (templates/scheduler/webhook.yaml) matches pod CREATE in every namespace not
labelled hami.io/webhook=ignore and not listed in whitelistNamespaces: kube-system and the stack's other namespaces
included. With failurePolicy Fail every pod creation there waits for hami-scheduler, its own replacement pod
among them, so one hami-scheduler outage stops Karpenter, CoreDNS and every team. Ignore is the right value for
that scope, and it costs no isolation: a team pod the webhook missed keeps the default scheduler, and HAMi's
device plugin refuses to allocate a GPU to a pod HAMi did not place (Allocate: "no binding pod found on node",
pkg/util/util.go at 2.10.0). Fail would be right only for a webhook scoped to the HAMi team namespaces by a
namespaceSelector (chart 2.10.0's admissionWebhook.namespaceSelector could express one; the stack keeps the
chart's selector).
"""

from __future__ import annotations

from collections.abc import Iterator

from ..hami import Hami
from ..rule import Finding, Rule, finding
from ..stack import StackView


def check_fails_open(view: StackView, _config: None) -> Iterator[Finding]:
    hami = Hami.of(view)
    if hami is None or hami.webhook.get("enabled") is False:
        return
    policy = hami.webhook.get("failurePolicy")
    if policy != "Ignore":
        yield finding(
            hami.resource,
            "values.scheduler.admissionWebhook.failurePolicy",
            policy,
            "the webhook matches pods in every namespace not labelled hami.io/webhook=ignore, kube-system "
            "included: failing closed, every pod creation there waits for hami-scheduler, its own replacement "
            "among them",
            'set it to "Ignore" (a pod the webhook misses gets no GPU from HAMi\'s device plugin, so failing open '
            "costs no isolation)",
        )


RULE = Rule(
    name="hami-webhook-fails-open",
    order=37,
    description="The HAMi release's admission webhook has failurePolicy Ignore.",
    why="The chart's webhook sees every namespace but those labelled to be skipped: failing closed, a "
    "hami-scheduler outage blocks every pod creation in the cluster, the controllers' included.",
    remediation="Keep gpushare's scheduler.admissionWebhook.failurePolicy: Ignore in the HAMi values.",
    enforcement="mandatory",
    severity="high",
    check=check_fails_open,
)

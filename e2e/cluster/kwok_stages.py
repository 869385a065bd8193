"""The pod stages KWOK plays on the rig's nodes: a bound pod runs, a Job's pod completes, a deleted pod goes.

KWOK (v0.7.0, `Stage` API kwok.x-k8s.io/v1alpha1) plays built-in pod stages unless its config lists pod stages of
its own, and then plays only those (pkg/kwok/cmd/root.go: defaults per resource kind). The rig lists three, with
the built-in behaviour and one addition: a Job's pod completes after the delay its annotations ask for, so a
simulated batch pod runs its own duration from its own start (and a replacement pod starts over).

- `COMPLETE_AFTER` holds a Go duration (`90s`): the pod completes that long after KWOK last saw it change (KWOK
  re-arms a stage's delay on every update of the pod, so this is not a start time). The simulator sets a year:
  the pod waits for it.
- `COMPLETE_AT` holds an RFC 3339 time: the pod completes then, however often it changes. The simulator sets it
  from the moment the pod really started, seen on its watch (a gang's pods once the last of them started). It
  wins over `COMPLETE_AFTER`.
- Neither: the pod completes at once, KWOK's own behaviour (the scenarios' Jobs rely on it).
"""

from __future__ import annotations

from typing import Any

COMPLETE_AFTER = "rig.gpushare.io/complete-after"
COMPLETE_AT = "rig.gpushare.io/complete-at"
STAGE_API = "kwok.x-k8s.io/v1alpha1"


def _stage(name: str, selector: list[dict[str, Any]], next_: dict[str, Any], **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": STAGE_API,
        "kind": "Stage",
        "metadata": {"name": name},
        "spec": {
            "resourceRef": {"apiGroup": "v1", "kind": "Pod"},
            "selector": {"matchExpressions": selector},
            "next": next_,
            **spec,
        },
    }


def _is(key: str, operator: str, *values: str) -> dict[str, Any]:
    return {"key": key, "operator": operator, **({"values": list(values)} if values else {})}


# A running pod's status as a kubelet reports it: every container started and ready, the pod's IPs (the rig's pods
# never use the host network).
_RUNNING = """\
{{ $now := Now }}
conditions:
- type: Initialized
  status: "True"
  lastTransitionTime: {{ $now | Quote }}
- type: Ready
  status: "True"
  lastTransitionTime: {{ $now | Quote }}
- type: ContainersReady
  status: "True"
  lastTransitionTime: {{ $now | Quote }}
containerStatuses:
{{ range .spec.containers }}
- name: {{ .name | Quote }}
  image: {{ .image | Quote }}
  ready: true
  started: true
  restartCount: 0
  state:
    running:
      startedAt: {{ $now | Quote }}
{{ end }}
hostIP: {{ NodeIPWith .spec.nodeName | Quote }}
podIP: {{ PodIPWith .spec.nodeName false .metadata.uid .metadata.name .metadata.namespace | Quote }}
phase: Running
startTime: {{ $now | Quote }}
"""

# A finished pod: every container exited 0.
_SUCCEEDED = """\
{{ $now := Now }}
containerStatuses:
{{ range .spec.containers }}
- name: {{ .name | Quote }}
  image: {{ .image | Quote }}
  ready: false
  started: false
  restartCount: 0
  state:
    terminated:
      exitCode: 0
      reason: Completed
      startedAt: {{ $now | Quote }}
      finishedAt: {{ $now | Quote }}
{{ end }}
phase: Succeeded
"""


def pod_stages() -> list[dict[str, Any]]:
    """KWOK's config documents for the rig's pods: run once bound, a Job's pod completes when asked, go when
    deleted."""
    alive = _is(".metadata.deletionTimestamp", "DoesNotExist")
    return [
        _stage("pod-ready", [alive, _is(".status.podIP", "DoesNotExist")], {"statusTemplate": _RUNNING}),
        _stage(
            "pod-complete",
            [alive, _is(".status.phase", "In", "Running"), _is(".metadata.ownerReferences.[].kind", "In", "Job")],
            {"statusTemplate": _SUCCEEDED},
            delay={
                "durationMilliseconds": 0,
                "durationFrom": {
                    "jq": {
                        "expression": f'.metadata.annotations["{COMPLETE_AT}"] // '
                        f'.metadata.annotations["{COMPLETE_AFTER}"]'
                    }
                },
            },
        ),
        _stage(
            "pod-delete",
            [_is(".metadata.deletionTimestamp", "Exists")],
            {"finalizers": {"empty": True}, "delete": True},
        ),
    ]

"""`make try`: a team's own manifests placed on the offline cluster running the stack, and what happened to each.

`manifests` reads and checks the files before any cluster starts (pure); `run` applies them into the team's
namespace of a rig running the stack and watches what the admission policies, quota, HAMi, kube-scheduler and
Karpenter do; `reasons` words why a pod was refused or left pending, and what to change (pure); `report` writes the
terminal table, build/e2e/try.md and try.json (pure).
"""

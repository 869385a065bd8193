"""The offline cluster and what runs on it, in three packages that each import only downwards:

- `e2e.cluster`: the environment. Builds real upstream binaries from pinned Go modules and runs them (etcd, the
  Kubernetes control plane, Karpenter with its kwok provider, KWOK, HAMi's scheduler and webhook, the mock device
  plugin, Prometheus) with the stack's offline plan applied.
- `e2e.suites`: `make e2e`, the scenarios that prove the stack on it, one module per concern.
- `e2e.simulator`: `make simulate`, a workload mix or a day of demand played on it, with its figures and report.

`python -m e2e` (`__main__`) builds the binaries and re-runs itself inside a private network namespace (`run`).
"""

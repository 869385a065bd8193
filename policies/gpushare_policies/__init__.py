"""The gpushare policy pack: rules that keep Karpenter, HAMi and the mock device plugin in agreement.

Rules are pure functions over a `StackView`, so `make plan`, `make check` and the Pulumi CLI (through
`pulumi_policy`) run one implementation.
"""

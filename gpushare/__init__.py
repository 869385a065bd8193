"""gpushare: pure model and renderers for shared GPUs on EKS (no Pulumi imports in this package)."""

"""Pure renderers: typed config in, plain dicts out (deterministic, no Pulumi import)."""

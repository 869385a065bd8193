"""Thin Pulumi ComponentResources, one per concern; all data comes from gpushare's renderers."""

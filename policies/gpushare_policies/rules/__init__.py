"""One module per rule, named after it (`hami-overlay-coverage` -> hami_overlay_coverage.py), each exporting
`RULE`; the registry finds them here. Rules import the model modules beside this package, never each other."""

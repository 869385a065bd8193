"""Command-line tools behind the Makefile: plan, check, golden, bench."""

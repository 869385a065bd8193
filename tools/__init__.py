"""Command-line tools behind the Makefile: plan, check, golden, docs, bench, rules-test."""

"""`make simulate`: what the stack's design costs on a day of GPU demand, played on the offline cluster by real
Karpenter and real HAMi, told apart from what the rig's compression of the day costs.

A fixed mix (`mix`), a trace of a day (`trace`) or a cluster's own pod history (`replay`) becomes the demand the
rig plays (`day`, with the budget windows of `budgets`); the oracle and the policy-aware bound (`oracle`, over
`packing`), the run's raw and latency-corrected cost and its other figures (`figures`, pure) and the report, the
speed check and the plots (`report`) measure it.
"""

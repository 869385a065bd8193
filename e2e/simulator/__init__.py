"""`make simulate`: a fixed workload mix (`mix`) or a day of demand (`trace`, played by `day`) on the offline
cluster, with the pure figures (`figures`, the oracle's `packing`) and the report and plots (`report`).
"""

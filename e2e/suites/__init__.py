"""`make e2e`: the scenarios that prove the stack on the offline cluster, one module per concern (objects and
admission, registration, scale-up, HAMi placement, disruption, quotas and priorities, time-slicing, monitoring),
registered and run by `runner`, reported by `report`.
"""

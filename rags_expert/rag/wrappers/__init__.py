"""What wraps every node: a fault becomes the failure state (``failsafe``), the budget, the timings, and the
answer-time permission check (``guard``, ``authorization``)."""

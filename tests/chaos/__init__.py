"""Chaos scenarios: faults injected into real servers and worker processes, judged by a ledger."""

"""Every chaos scenario by name: the first table (``scenarios.py``) and the scenarios of later
issues, which live in modules of their own (``topologies.py``: Redis Cluster, Sentinel, cut-off
worker hosts, beanstalkd)."""

from __future__ import annotations

from chaos import scenarios, topologies
from chaos.scenarios import Scenario

CATALOGUE: list[Scenario] = [*scenarios.CATALOGUE, *topologies.SCENARIOS]
BY_NAME = {s.name: s for s in CATALOGUE}

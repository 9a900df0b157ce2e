"""The jobs of :mod:`apps.jobs` on a beanstalkd or SQS connection.

The test gives the worker its connections as JSON in TEST_QUEUE_CONNECTIONS (the endpoints are
made per test session) and picks the default one with EVENTBUS_CONNECTION.
"""

from __future__ import annotations

import json
import os

import eventbus
from apps import jobs  # noqa: F401 - the same job classes, registered by importing them

eventbus.configure(connections=json.loads(os.environ["TEST_QUEUE_CONNECTIONS"]))

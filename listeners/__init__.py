"""Listener declaration for eventbus: ``@listener``, queued listeners, ``CallQueuedListener``."""

from listeners.decorator import ListenerOptions, ListenerWrapper, listener
from listeners.queued import CallQueuedListener

__all__ = ["CallQueuedListener", "ListenerOptions", "ListenerWrapper", "listener"]

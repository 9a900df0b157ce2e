"""The scheduler: push jobs on a cron schedule (``eventbus schedule work``).

::

    from eventbus import schedule

    schedule.job(PruneCarts()).hourly()
    schedule.job(SendDigest()).daily_at("07:30").timezone("Europe/Berlin")
    schedule.job(SyncStock(), queue="sync").cron("*/5 * * * *").without_overlapping()

``eventbus.schedule`` is the app's default :class:`Schedule`; define its entries in the module
you pass to ``--app``. Cron expressions need croniter: ``pip install 'eventbus[schedule]'``.
"""

from eventbus.scheduling.runner import Fired, Scheduler
from eventbus.scheduling.schedule import Schedule, ScheduledJob

#: The schedule ``eventbus schedule run|work|list`` runs.
schedule = Schedule()

__all__ = ["Fired", "Schedule", "ScheduledJob", "Scheduler", "schedule"]

"""The scheduler: push jobs, or call functions, on a cron schedule (``eventbus schedule work``).

::

    from eventbus import schedule
    schedule.job(PruneCarts()).hourly()
    schedule.job(SendDigest()).daily_at("07:30").weekdays().timezone("Europe/Berlin")
    schedule.job(SyncStock(), queue="sync").every_five_minutes().without_overlapping()
    schedule.call(refresh_cache).every_ten_seconds()

``eventbus.schedule`` is the app's default :class:`Schedule`; define its entries in the module
you pass to ``--app``. Cron expressions need croniter: ``pip install 'eventbus[schedule]'``.
"""

from eventbus.scheduling.firing import Fired
from eventbus.scheduling.runner import Scheduler, interrupt
from eventbus.scheduling.schedule import Schedule, ScheduledCall, ScheduledEvent, ScheduledJob

#: The schedule ``eventbus schedule run|work|list|test`` runs.
schedule = Schedule()

__all__ = ["Fired", "Schedule", "ScheduledCall", "ScheduledEvent", "ScheduledJob", "Scheduler",
           "interrupt", "schedule"]

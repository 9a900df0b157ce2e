"""The hooks the eventbus runtime calls: :func:`reset`, :func:`migrate`, :func:`validate_settings`.

Notifications keep no process state of their own beyond the channels made from the
configuration; these functions let the core's ``configure``/``reset``/``migrate`` reach it
without the core importing this package.
"""

from __future__ import annotations

from collections.abc import Mapping

from notifications import _core, alerts, store
from notifications.channels import registry
from notifications.mail.transports import check_mail_url
from notifications.sms.providers import provider_from_url


def reset() -> None:
    """Forget the channels (and so the mail transport and SMS provider) made from the configuration.

    The next delivery builds them again from the current settings, so a second
    ``configure(mail=..., sms=...)`` takes effect. Channels registered with
    ``register_channel`` are kept.
    """
    registry.reset()


def migrate() -> list[str]:
    """Create the ``notifications`` table if it is missing; return the table names."""
    return store.migrate()


def migrate_lines() -> list[str]:
    """``eventbus migrate``'s lines for notifications: the hook registered by :func:`install`,
    and the ``eventbus.migrate`` entry point, so the table is made even for an app that never
    imports this package (the core may not import it)."""
    return [f"notifications: {', '.join(migrate())} ready"]


def validate_settings(mail_url: str, sms_url: str) -> None:
    """Raise ConfigurationError naming the setting when the mail or SMS URL is malformed.

    Only parses: nothing connects, no directory is created, nothing is logged.
    """
    check_mail_url(mail_url)
    provider_from_url(sms_url)  # builds a provider object, which opens nothing before its first send


def check_alert_routes(routes: Mapping[str, str]) -> None:
    """``configure(alerts=...)``: a Slack route is a webhook URL (a typo is found at start, not
    when the first alert should reach someone)."""
    slack = routes.get("slack")
    if slack is not None and not slack.startswith(("https://", "http://")):
        raise _core.ConfigurationError("'alerts' has a 'slack' route that is not a webhook URL "
                                       "(https://hooks.slack.com/services/...)")


def install() -> None:
    """Join the core's runtime: validate on configure, forget channels on reset, migrate the
    table, send the alerts of ``eventbus monitor``."""
    _core.on_configure(lambda current: validate_settings(current.mail, current.sms))
    _core.on_configure(lambda current: check_alert_routes(current.alerts))
    _core.on_reset(reset)
    _core.on_migrate(migrate_lines)
    _core.on_alert(alerts.send_alert)

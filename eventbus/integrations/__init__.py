"""Optional integrations, each behind its extra: ``prometheus`` (``eventbus[metrics]``) and
``otel`` (``eventbus[otel]``). Importing these modules imports no third-party package; that
happens when an integration is switched on."""

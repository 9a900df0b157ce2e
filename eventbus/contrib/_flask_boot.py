"""``--app`` of the workers that ``flask eventbus work --processes N`` (or ``--watch``) starts.

Inside ``flask eventbus ...`` the app is loaded already and this does nothing. In a fresh
``python -m eventbus work`` process it loads the Flask app the way ``flask`` does, from
``FLASK_APP`` (or ``app.py`` / ``wsgi.py`` in the working directory), which runs its
``EventBus.init_app``.
"""

from __future__ import annotations

import os

from flask.cli import ScriptInfo

from eventbus.contrib.flask import current_app_for_jobs

#: The loaded app, held here: the integration keeps only a weak reference to it, so without
#: this one the app would be collected and jobs would run outside any app context.
app = current_app_for_jobs()
if app is None:
    app = ScriptInfo(app_import_path=os.environ.get("FLASK_APP")).load_app()

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

if current_app_for_jobs() is None:
    ScriptInfo(app_import_path=os.environ.get("FLASK_APP")).load_app()

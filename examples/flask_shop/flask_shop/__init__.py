"""The shop as a Flask app with Flask-SQLAlchemy: ``flask --app flask_shop run`` serves it,
``flask --app flask_shop eventbus work`` runs its queued jobs."""

from flask_shop.app import create_app

__all__ = ["create_app"]

"""The web dashboard (``pip install 'eventbus[dashboard]'``): ``eventbus dashboard`` serves it,
``create_app()`` mounts it in a FastAPI or Starlette app."""

from eventbus.dashboard.app import create_app

__all__ = ["create_app"]

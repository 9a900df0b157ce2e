"""The shop as a FastAPI app on SQLAlchemy: ``uvicorn fastapi_shop.app:app`` serves it,
``eventbus work --app fastapi_shop.app`` runs its queued jobs."""

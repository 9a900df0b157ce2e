"""The shop as a Django project: ``python manage.py runserver`` serves it,
``python manage.py eventbus work`` runs its queued jobs."""

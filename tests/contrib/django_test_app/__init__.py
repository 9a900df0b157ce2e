"""Models the Django integration tests queue by key."""

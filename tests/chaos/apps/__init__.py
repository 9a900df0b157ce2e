"""``--app`` modules for the chaos workers (``chaos.apps.app``) and the jobs they run."""

"""The side-by-side benchmark's harness: environments, idle checks, the measurements, the table."""

"""Alembic migrations of Sift's schema (run by `sift db upgrade` and on `sift serve`)."""

"""Sift for other tools: the HTTP API under /api/v1, as the asker its token names."""

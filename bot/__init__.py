"""Sift's edges: the CLI, the web server, Slack and Teams adapters, and the composition root."""

"""Offline evaluation: datasets, metrics, runs over the real index, reports."""

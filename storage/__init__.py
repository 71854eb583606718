"""Sift's memory: interactions, feedback, document statistics, the grade cache and sync state."""

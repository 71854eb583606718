"""Sift's retrieval-and-grading core: understand, retrieve, grade, select, generate."""

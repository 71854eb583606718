"""Sift-managed Weaviate: getting the binary and running the server process."""

"""Prometheus metrics of `sift serve`: what is counted, where it is observed, how it is served."""

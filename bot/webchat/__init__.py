"""The web chat: a third chat surface, a page at / on the `sift serve` web server."""

"""Sift as a Model Context Protocol server at /mcp: tools for other assistants."""

"""Keeps the index in step with the knowledge platform: connectors, chunking, embedding, upserts."""

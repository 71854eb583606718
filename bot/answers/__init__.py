"""The answers loop: people's replies captured, reviewed, indexed, asked again."""

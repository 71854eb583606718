"""What the connectors share and are not: HTTP, tokens, conversion, Microsoft and Slack clients."""

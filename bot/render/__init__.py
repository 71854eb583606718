"""Pure renderers from `rag.Answer` to each platform's format (terminal, JSON, Slack, Teams)."""

"""The chat core: one ask flow and one vote flow that every chat surface shares."""

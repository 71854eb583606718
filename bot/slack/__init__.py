"""The Slack adapter: bolt listeners that turn Slack events into questions and votes."""

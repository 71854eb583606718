"""Microsoft Teams adapter on the Microsoft 365 Agents SDK: activity in, Answer out."""

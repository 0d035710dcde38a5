"""Chat channels: the surfaces where people answer asks (Slack, Telegram)."""

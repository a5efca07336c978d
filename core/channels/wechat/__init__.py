"""WeChat through its personal-bot protocol, iLink (docs/channels.md)."""

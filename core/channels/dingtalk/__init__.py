"""DingTalk: a robot of the person's own DingTalk app, in Stream mode (docs/channels.md#dingtalk)."""

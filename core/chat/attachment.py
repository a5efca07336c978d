"""One file a person sends with a chat message, and how many and how large they may be
(docs/chat.md#attachments). Cheap to import: the window builds these; `attachments.py` saves them."""

from __future__ import annotations

from dataclasses import dataclass

MAX_FILE_BYTES = 20 * 1024 * 1024
MAX_FILES = 10
MAX_MESSAGE_BYTES = 32 * 1024 * 1024  # one message with its files on the wire: base64 adds a third


@dataclass(frozen=True, slots=True)
class Attachment:
    name: str  # as the person's file was called ('' when it had none: a pasted image)
    media_type: str  # as stated; only informs, the bytes decide what is an image
    data: bytes

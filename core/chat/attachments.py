"""Files a person sends with a chat message from the desktop or the API (docs/chat.md#attachments).

Each is checked, then saved in the conversation's `inbox/` folder of the bot's workspace under the same safe,
stable names as a chat channel's attachments, and the message's text names it by its path there:
`[image: inbox/<conversation>/photo.png]` or `[file: inbox/<conversation>/report.pdf]`. The bot opens it with
its file tools; a bot whose model takes images also sees an image as one (core/agent/images.py). An image is
what its first bytes say it is, never what its name or stated type claim.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import hashlib
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from core.agent.images import media_type as image_type
from core.channels.wechat.media import MediaError, save
from core.chat.attachment import MAX_FILE_BYTES, MAX_FILES, Attachment
from core.errors import InvalidInputError

INBOX = "inbox"
TOO_LARGE = (
    "is larger than 32 MB, the most one message may carry; each file may be at most 20 MB. Send fewer or "
    "smaller files, or put a big one in the bot's workspace folder and name it in the message"
)
MAX_NAME_CHARS = 200
# Every marker an attachment leaves in a message's text, relative to the bot's workspace (channels' too).
_MARKER = re.compile(r"\[(image|file|voice|video): (inbox/[^\]\n]+)\]")
_FIELDS = frozenset({"name", "mediaType", "dataBase64"})
_NOT_IN_NAMES = str.maketrans({"[": "(", "]": ")"})  # a name must not end its marker early


def _size(n: int) -> str:
    return f"{n / (1024 * 1024):.1f} MB" if n >= 1024 * 1024 else f"{n / 1024:.0f} KB"


def check(attachment: Attachment, field: str) -> None:
    if not attachment.data:
        raise InvalidInputError(field, "is an empty file; attach a file with something in it")
    if len(attachment.data) > MAX_FILE_BYTES:
        raise InvalidInputError(
            field,
            f"is {_size(len(attachment.data))}; a file may be at most {MAX_FILE_BYTES // (1024 * 1024)} MB. "
            "Send a smaller file, or put it in the bot's workspace folder and name it in the message",
        )
    if len(attachment.name) > MAX_NAME_CHARS or "\x00" in attachment.name:
        raise InvalidInputError(field, f"has a name over {MAX_NAME_CHARS} characters or with a NUL")


def check_all(attachments: Sequence[Attachment]) -> None:
    if len(attachments) > MAX_FILES:
        raise InvalidInputError(
            "attachments", f"has {len(attachments)} files; send at most {MAX_FILES} at once"
        )
    for n, attachment in enumerate(attachments):
        check(attachment, f"attachments[{n}]")


def from_json(value: object) -> list[Attachment]:
    """`attachments` of a JSON message body: `[{name, mediaType, dataBase64}]`, each checked."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise InvalidInputError("attachments", "must be a list of {name, mediaType, dataBase64}")
    found: list[Attachment] = []
    for n, item in enumerate(value):
        field = f"attachments[{n}]"
        if not isinstance(item, dict):
            raise InvalidInputError(field, "must be an object {name, mediaType, dataBase64}")
        extra = sorted(set(item) - _FIELDS)
        if extra:
            raise InvalidInputError(
                f"{field}.{extra[0]}", "is not an attachment field; send name, mediaType and dataBase64"
            )
        name, kind, data = item.get("name", ""), item.get("mediaType", ""), item.get("dataBase64")
        if not isinstance(name, str) or not isinstance(kind, str):
            raise InvalidInputError(field, "name and mediaType must be strings")
        if not isinstance(data, str):
            raise InvalidInputError(f"{field}.dataBase64", "is required: the file's bytes in base64")
        try:
            decoded = base64.b64decode(data, validate=True)
        except (binascii.Error, ValueError):
            raise InvalidInputError(f"{field}.dataBase64", "is not base64; encode the file's bytes") from None
        found.append(Attachment(name.strip(), kind.strip(), decoded))
    check_all(found)
    return found


def from_parts(parts: Mapping[str, Any]) -> list[Attachment]:
    """Files of a multipart body as core.api.multipart reads them (each already an Attachment)."""
    found = [p for p in parts.values() if isinstance(p, Attachment)]
    check_all(found)
    return found


def _place(attachment: Attachment, folder: Path, workspace: Path) -> str:
    kind = "image" if image_type(attachment.data[:16]) else "file"
    # Named by its bytes when it came without a name (a pasted image): sending it again keeps one copy.
    stem = "pasted-" + hashlib.sha256(attachment.data).hexdigest()[:12]
    try:
        name = attachment.name.translate(_NOT_IN_NAMES)
        saved = save(attachment.data, folder, kind=kind, stem=stem, file_name=name)
    except MediaError as exc:
        raise OSError(exc.reason) from exc
    return f"[{kind}: {saved.relative_to(workspace).as_posix()}]"


async def save_all(attachments: Sequence[Attachment], workspace: Path, conversation_id: str) -> list[str]:
    """Save each in `<workspace>/inbox/<conversation>/`; the marker of each, in order. Off the loop."""
    folder = workspace / INBOX / conversation_id

    def place_all() -> list[str]:
        return [_place(a, folder, workspace) for a in attachments]

    return await asyncio.to_thread(place_all)


def with_markers(text: str, markers: Sequence[str]) -> str:
    """The person's words, then one line per attachment."""
    return "\n".join([*([text.strip()] if text.strip() else []), *markers])


def absolute_markers(texts: Sequence[str], workspace: Path) -> list[str]:
    """Each attachment the texts name, once, with its absolute path: for a task, whose folder is not the
    workspace the markers are relative to."""
    seen: dict[str, str] = {}
    for text in texts:
        for kind, relative in _MARKER.findall(text):
            seen.setdefault(relative, f"[{kind}: {(workspace / relative).as_posix()}]")
    return list(seen.values())

"""Reading a `multipart/form-data` body (a chat message with files, as a browser form or `curl -F` sends
it) with the standard library's MIME parser: each file part is an Attachment, each other part a string."""

from __future__ import annotations

import email.parser
import email.policy
from email.message import EmailMessage
from typing import cast

from core.chat.attachment import Attachment
from core.errors import InvalidInputError

MAX_PARTS = 40


def form_parts(content_type: str, body: bytes) -> dict[str, str | Attachment]:
    """Each part by its field name; several files under one name (`attachments`) become `name[0]`,
    `name[1]`, ... InvalidInputError for a body that is not multipart with a boundary."""
    if "boundary=" not in content_type:
        raise InvalidInputError(
            "body", "is multipart without a boundary; let your HTTP client set the header"
        )
    head = f"Content-Type: {content_type}\r\nMIME-Version: 1.0\r\n\r\n".encode()
    parsed = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(head + body)
    if not parsed.is_multipart():
        raise InvalidInputError("body", "is not a multipart body")
    found: dict[str, str | Attachment] = {}
    for n, raw in enumerate(parsed.iter_parts()):
        if n >= MAX_PARTS:
            raise InvalidInputError("body", f"has more than {MAX_PARTS} parts")
        part = cast(EmailMessage, raw)
        name = part.get_param("name", header="content-disposition")
        if not isinstance(name, str) or not name:
            raise InvalidInputError("body", f"part {n + 1} has no name in its Content-Disposition")
        payload = part.get_payload(decode=True)
        data = payload if isinstance(payload, bytes) else b""
        file_name = part.get_filename()
        if file_name is not None:
            key, k = name, 0
            while key in found:
                k += 1
                key = f"{name}[{k}]"
            found[key] = Attachment(file_name, part.get_content_type(), data)
            continue
        try:
            found[name] = data.decode("utf-8")
        except UnicodeDecodeError:
            raise InvalidInputError(name, "is not UTF-8 text") from None
    return found

"""The files waiting in the composer to go with the next message (docs/desktop.md#chat-view): dropped or
chosen files by their path, pasted images as the picture itself. Nothing is read while the person writes;
`read_all` reads them at 发送, in a worker thread, so a big file never holds up the window."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from PySide6.QtCore import QBuffer, QIODevice, QMimeDatabase
from PySide6.QtGui import QImage

from core.chat.attachment import MAX_FILE_BYTES, MAX_FILES, Attachment

_MIME = QMimeDatabase()


@dataclass(frozen=True, slots=True)
class PendingFile:
    name: str  # shown on its chip; '' for a pasted image (named after its bytes once saved)
    size: int  # bytes on disk; 0 for a pasted image until it is encoded
    path: Path | None = None
    image: QImage | None = None


class TooManyFiles(Exception):
    pass


class FileTooLarge(Exception):
    def __init__(self, name: str, size: int) -> None:
        super().__init__(name)
        self.name = name
        self.size = size


def from_path(path: Path) -> PendingFile:
    """A file the person dropped or chose; FileTooLarge past the limit, OSError when it can't be read."""
    size = path.stat().st_size
    if not path.is_file():
        raise IsADirectoryError(str(path))
    if size > MAX_FILE_BYTES:
        raise FileTooLarge(path.name, size)
    return PendingFile(path.name, size, path=path)


def from_image(image: QImage) -> PendingFile:
    return PendingFile("", 0, image=image.copy())


def check_room(pending: list[PendingFile], adding: int) -> None:
    if len(pending) + adding > MAX_FILES:
        raise TooManyFiles


def read_one(item: PendingFile) -> Attachment:
    """The file's bytes (blocking: call it in a worker thread)."""
    if item.image is not None:
        buffer = QBuffer()
        buffer.open(QIODevice.OpenModeFlag.WriteOnly)
        item.image.save(buffer, "PNG")  # type: ignore[call-overload]  # the stubs ask bytes; PySide6 takes str
        return Attachment("", "image/png", bytes(buffer.data().data()))
    assert item.path is not None
    data = item.path.read_bytes()
    return Attachment(item.name, _MIME.mimeTypeForFile(str(item.path)).name(), data)


def read_all(items: list[PendingFile]) -> list[Attachment]:
    return [read_one(item) for item in items]

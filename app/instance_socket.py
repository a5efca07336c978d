"""A second `errand` on the same data dir asks the running one to bring its window forward.

The running app listens on a local socket (a Unix socket or a Windows named pipe, through QLocalServer)
whose name comes from the data dir, so Errands on different data dirs never hear each other. The second
launch connects, sends `show`, and waits for `ok`: an answer proves the window came forward; silence means
the lock holder has no window (`errand serve`) or is stuck, and the caller says so.
"""

from __future__ import annotations

import hashlib
import logging
import time
from collections.abc import Callable
from pathlib import Path

from PySide6.QtCore import QObject, QThread
from PySide6.QtNetwork import QLocalServer, QLocalSocket

log = logging.getLogger(__name__)

SHOW_REQUEST = b"show\n"
SHOW_ANSWER = b"ok\n"
# The running app may hold the lock a moment before it listens (it builds its window first).
_ANSWER_WAIT_S = 3.0
_RETRY_GAP_MS = 100


def socket_name(data_dir: Path) -> str:
    """Short (Unix socket paths are limited to about 100 bytes) and the same for every spelling of the dir."""
    digest = hashlib.sha256(str(data_dir.resolve()).encode("utf-8")).hexdigest()[:16]
    return f"errand-{digest}"


class InstanceServer(QObject):
    """Listens for `show` from later launches and calls `on_show` for each one."""

    def __init__(self, name: str, on_show: Callable[[], None], parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._on_show = on_show
        self._server = QLocalServer(self)
        self._server.setSocketOptions(QLocalServer.SocketOption.UserAccessOption)
        self._server.newConnection.connect(self._accept)
        # The caller holds the data-dir lock, so a socket left under this name is from an Errand that died.
        QLocalServer.removeServer(name)
        if not self._server.listen(name):
            log.warning("cannot listen for later launches on %s: %s", name, self._server.errorString())
        self._clients: set[QLocalSocket] = set()

    @property
    def listening(self) -> bool:
        return self._server.isListening()

    def close(self) -> None:
        self._server.close()
        for client in list(self._clients):
            client.abort()
        self._clients.clear()

    def _accept(self) -> None:
        while self._server.hasPendingConnections():
            client = self._server.nextPendingConnection()
            if client is None:
                return
            self._clients.add(client)
            client.readyRead.connect(lambda c=client: self._read(c))
            client.disconnected.connect(lambda c=client: self._forget(c))
            if client.canReadLine():
                self._read(client)

    def _read(self, client: QLocalSocket) -> None:
        while client.canReadLine():
            line = bytes(client.readLine().data())
            if line == SHOW_REQUEST:
                log.info("a later launch asked for the window")
                self._on_show()
                client.write(SHOW_ANSWER)
                client.flush()

    def _forget(self, client: QLocalSocket) -> None:
        self._clients.discard(client)
        client.deleteLater()


def ask_to_show(name: str, wait_s: float = _ANSWER_WAIT_S) -> bool:
    """True once the Errand listening on `name` answered that its window came forward. Blocks (up to
    `wait_s`) without an event loop: this runs before, and instead of, a second app."""
    deadline = time.monotonic() + wait_s
    while True:
        socket = QLocalSocket()
        socket.connectToServer(name)
        if socket.waitForConnected(_ms_left(deadline)):
            return _exchange(socket, deadline)
        socket.abort()
        if time.monotonic() + _RETRY_GAP_MS / 1000 >= deadline:
            return False
        QThread.msleep(_RETRY_GAP_MS)


def _exchange(socket: QLocalSocket, deadline: float) -> bool:
    try:
        socket.write(SHOW_REQUEST)
        if not socket.waitForBytesWritten(_ms_left(deadline)):
            return False
        answer = b""
        while not answer.endswith(b"\n"):
            if not socket.waitForReadyRead(_ms_left(deadline)):
                return False
            answer += bytes(socket.readAll().data())
        return answer == SHOW_ANSWER
    finally:
        socket.abort()


def _ms_left(deadline: float) -> int:
    return max(1, int((deadline - time.monotonic()) * 1000))

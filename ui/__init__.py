"""The desktop UI (PySide6 widgets). It reads core view models through facades and never touches the store."""

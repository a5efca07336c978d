"""The `settings` table: app-wide key/value settings, each value stored as JSON."""

from __future__ import annotations

import json
from typing import TypeAlias

from sqlalchemy.orm import Session

from core.store.models import SettingRow

JsonValue: TypeAlias = str | int | float | bool | list["JsonValue"] | dict[str, "JsonValue"] | None


def get_setting(s: Session, key: str, default: JsonValue = None) -> JsonValue:
    row = s.get(SettingRow, key)
    if row is None:
        return default
    value: JsonValue = json.loads(row.value)
    return value


def set_setting(s: Session, key: str, value: JsonValue, now: float) -> None:
    # allow_nan=False: NaN and Infinity are not JSON, and other readers of the table would choke on them.
    encoded = json.dumps(value, ensure_ascii=False, allow_nan=False)
    row = s.get(SettingRow, key)
    if row is None:
        s.add(SettingRow(key=key, value=encoded, updated_at=now))
    else:
        row.value = encoded
        row.updated_at = now
    s.flush()


def delete_setting(s: Session, key: str) -> None:
    row = s.get(SettingRow, key)
    if row is not None:
        s.delete(row)
        s.flush()

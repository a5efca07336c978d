"""Turning a BotUpdate into the row changes it means, checking every field first: a bad field raises
InvalidInputError before anything is stored, so a rejected update changes nothing."""

from __future__ import annotations

from core.bots.validation import (
    validate_api_key,
    validate_avatar,
    validate_base_url,
    validate_clock_time,
    validate_images,
    validate_model_name,
    validate_name,
    validate_preset,
    validate_provider,
    validate_task_slots,
)
from core.bots.views import BotUpdate
from core.errors import InvalidInputError
from core.store.bots import BotChanges


def settings_changes(update: BotUpdate) -> BotChanges:
    """The columns to write. The key itself is only checked here: it goes to the secret store, never a row."""
    changes = BotChanges()
    if update.name is not None:
        changes["name"] = validate_name(update.name)
    if update.avatar is not None:
        changes["avatar"] = validate_avatar(update.avatar)
    if update.model_provider is not None:
        changes["model_provider"] = validate_provider(update.model_provider)
    if update.model_base_url is not None:
        changes["model_base_url"] = validate_base_url(update.model_base_url)
    if update.model_name is not None:
        changes["model_name"] = validate_model_name(update.model_name)
    if update.api_key is not None:
        validate_api_key(update.api_key)
    if update.preset is not None:
        changes["preset"] = validate_preset(update.preset)
    if update.task_slots is not None:
        changes["task_slots"] = validate_task_slots(update.task_slots)
    if update.quiet_start is not None:
        changes["quiet_start"] = validate_clock_time(update.quiet_start, "quietHours.start")
    if update.quiet_end is not None:
        changes["quiet_end"] = validate_clock_time(update.quiet_end, "quietHours.end")
    if update.paused is not None:
        if not isinstance(update.paused, bool):
            raise InvalidInputError("paused", "must be true or false")
        changes["paused"] = update.paused
    if update.window_nudge is not None:
        if not isinstance(update.window_nudge, bool):
            raise InvalidInputError("windowNudge", "must be true or false")
        changes["window_nudge"] = update.window_nudge
    if update.images is not None:
        changes["model_images"] = validate_images(update.images)
    return changes

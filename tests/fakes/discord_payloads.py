"""The Discord objects the fake serves (ids, users, the guild with its channels and thread), as Discord sends them
over the gateway and REST: shared by :mod:`tests.fakes.discord_server` and the tests that drive it."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

BOT_ID = "900000000000000001"
APP_ID = "900000000000000002"
GUILD_ID = "910000000000000001"
CHANNEL_ID = "920000000000000001"
"""``#general``."""
OTHER_CHANNEL_ID = "920000000000000002"
"""``#random``."""
THREAD_ID = "930000000000000001"
"""A thread in ``#general``."""
NEW_THREAD_ID = "930000000000000002"
"""A thread in ``#general`` that GUILD_CREATE did not list (discord.py has to look it up)."""
DM_CHANNEL_ID = "940000000000000001"
NONCE_TOO_LONG = {
    "message": "Invalid Form Body",
    "code": 50035,
    "errors": {"nonce": {"_errors": [{"code": "BASE_TYPE_MAX_LENGTH", "message": "Must be 25 or fewer in length."}]}},
}

BOT_USER = {"id": BOT_ID, "username": "helper", "global_name": None, "discriminator": "0", "avatar": None, "bot": True}
ALICE = {"id": "950000000000000001", "username": "alice", "global_name": "Alice", "discriminator": "0", "avatar": None}
MALLORY = {"id": "950000000000000002", "username": "mallory", "global_name": None, "discriminator": "0", "avatar": None}
OTHER_BOT = {"id": "950000000000000003", "username": "otherbot", "discriminator": "0", "avatar": None, "bot": True}


def now() -> str:
    return datetime.now(UTC).isoformat()


def member(user: dict[str, Any]) -> dict[str, Any]:
    return {"user": user, "roles": [], "joined_at": now(), "deaf": False, "mute": False, "flags": 0, "nick": None}


def text_channel(channel_id: str, name: str, position: int) -> dict[str, Any]:
    return {
        "id": channel_id,
        "type": 0,
        "guild_id": GUILD_ID,
        "name": name,
        "position": position,
        "permission_overwrites": [],
        "nsfw": False,
        "parent_id": None,
        "topic": None,
        "last_message_id": None,
        "rate_limit_per_user": 0,
    }


def thread(thread_id: str = THREAD_ID) -> dict[str, Any]:
    return {
        "id": thread_id,
        "type": 11,
        "guild_id": GUILD_ID,
        "parent_id": CHANNEL_ID,
        "owner_id": ALICE["id"],
        "name": "deploy questions",
        "last_message_id": None,
        "rate_limit_per_user": 0,
        "message_count": 0,
        "member_count": 1,
        "flags": 0,
        "thread_metadata": {
            "archived": False,
            "auto_archive_duration": 1440,
            "archive_timestamp": now(),
            "locked": False,
        },
    }


def guild() -> dict[str, Any]:
    return {
        "id": GUILD_ID,
        "name": "Team",
        "icon": None,
        "owner_id": ALICE["id"],
        "unavailable": False,
        "large": False,
        "member_count": 3,
        "verification_level": 0,
        "default_message_notifications": 0,
        "explicit_content_filter": 0,
        "mfa_level": 0,
        "premium_tier": 0,
        "nsfw_level": 0,
        "preferred_locale": "en-US",
        "features": [],
        "emojis": [],
        "stickers": [],
        "roles": [
            {
                "id": GUILD_ID,
                "name": "@everyone",
                "permissions": "1071698660929",
                "position": 0,
                "color": 0,
                "hoist": False,
                "managed": False,
                "mentionable": False,
                "flags": 0,
            }
        ],
        "members": [member(BOT_USER)],
        "channels": [text_channel(CHANNEL_ID, "general", 0), text_channel(OTHER_CHANNEL_ID, "random", 1)],
        "threads": [thread()],
        "voice_states": [],
        "presences": [],
        "stage_instances": [],
        "guild_scheduled_events": [],
        "joined_at": now(),
    }


def application() -> dict[str, Any]:
    return {
        "id": APP_ID,
        "name": "helper",
        "icon": None,
        "description": "",
        "bot_public": False,
        "bot_require_code_grant": False,
        "verify_key": "0" * 64,
        "flags": 0,
        "owner": ALICE,
        "team": None,
        "interactions_endpoint_url": None,
    }


def member_of(user: dict[str, Any]) -> dict[str, Any]:
    """A guild member object without its ``user`` (as a message's ``member`` field carries it)."""
    return {k: v for k, v in member(user).items() if k != "user"}


def message_payload(
    message_id: str,
    channel_id: str,
    author: dict[str, Any],
    content: str,
    *,
    mentions: list[dict[str, Any]] | tuple[dict[str, Any], ...] = (),
    attachments: tuple[dict[str, Any], ...] = (),
) -> dict[str, Any]:
    """A message object (in a guild channel unless ``channel_id`` is the DM's)."""
    data: dict[str, Any] = {
        "id": message_id,
        "channel_id": channel_id,
        "author": author,
        "content": content,
        "timestamp": now(),
        "edited_timestamp": None,
        "tts": False,
        "mention_everyone": False,
        "mentions": list(mentions),
        "mention_roles": [],
        "attachments": list(attachments),
        "embeds": [],
        "pinned": False,
        "type": 0,
        "flags": 0,
        "components": [],
    }
    if channel_id != DM_CHANNEL_ID:
        data["guild_id"] = GUILD_ID
    return data

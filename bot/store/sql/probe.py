"""Whether a configured database answers (``bot doctor``), without opening the store."""

from __future__ import annotations

import asyncio


async def postgres_reachable(url: str, timeout_s: float = 10) -> str | None:
    """None when PostgreSQL at ``url`` accepts a connection, else why not."""
    try:
        import asyncpg

        from bot.store.sql.postgres import dsn_of
    except ImportError:
        return "the postgres extra is not installed (pip install -e '.[postgres]' in the bot's clone)"
    try:
        conn = await asyncio.wait_for(asyncpg.connect(dsn_of(url)), timeout_s)
    except Exception as exc:
        return f"{exc.__class__.__name__}: {exc}"
    await conn.close()
    return None

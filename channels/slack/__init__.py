"""The Slack channel: slack-bolt's ``AsyncApp`` in Socket Mode, or over HTTP on the shared server.

Inbound (:mod:`channels.slack.inbound`): ``app_mention``, direct messages and replies in threads the
bot takes part in become :class:`~bot.events.InboundMessage`.  The same post delivered as both
``app_mention`` and ``message``, or retried by Slack (``X-Slack-Retry-Num``, Socket Mode
``retry_attempt``), is published once: its id is ``channel:ts``, checked here and by the gateway's
store.  A request is acknowledged (HTTP 200, or the Socket Mode envelope's ack) only after the inbox
committed its event; if that fails or the gateway is stopping, bolt answers with an error and Slack
sends it again.  A user's name and whether the bot is in a thread are looked up (cached) within
:data:`LOOKUP_BUDGET_S`, so the acknowledgement stays well inside Slack's 3 seconds.  ``block_actions``
presses go through the inbox's ``check_press``: a refusal is shown to the presser only (ephemeral), anything else
is handed on as an :class:`~bot.events.Action`.  ``/bot <command>`` runs ``/<command>``.  In HTTP mode every
request passes :mod:`channels.slack.gate` before bolt sees it: size (413), signature (401), then a body Slack
would send (400), each refusal one sparse log line.

Outbound (:mod:`channels.slack.outbound`, on :mod:`channels.slack.delivery`): mrkdwn, long texts split,
buttons as Block Kit with the payload in ``value``, ``chat.update`` for edits, 429 ``Retry-After`` honoured.
Slack has no typing indicator for bots on the Web API: ``kind="typing"`` puts the ``typing_reaction`` (:eyes:)
on the message being answered, and the next message to that chat takes it off.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from channels.slack.adapter import SlackChannel

__all__ = ["SlackChannel"]


def __getattr__(name: str) -> Any:
    # The adapter (slack-bolt, aiohttp) loads only when used: the settings module stays light.
    if name == "SlackChannel":
        from channels.slack.adapter import SlackChannel

        return SlackChannel
    raise AttributeError(name)

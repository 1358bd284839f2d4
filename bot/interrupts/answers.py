"""Answers to questions that ask for a secret: kept out of everything stored and shown."""

from __future__ import annotations

from agents.resolutions import Answer, Resolution
from bot.interrupts.text import yes_no
from bot.redaction import asks_for_secret, keep_out
from bot.store.rows import InterruptRow


def kept_out(row: InterruptRow, resolution: Resolution) -> Resolution:
    """``resolution`` as it is stored and shown: a typed answer to an ``ask_user`` whose question asks for a secret
    ("What is the wifi password?": the detector's labels, :func:`bot.redaction.asks_for_secret`) becomes
    ``‹redacted: kind›`` in the interrupt row and the edited prompt, and the redaction step hides the answer in
    everything else this process stores or shows from now on (:func:`bot.redaction.keep_out`: the history, the
    checkpoint, traces, a later tool call that passes it on). A yes or no, or a pressed choice, is kept as it is.

    The run resumed in this process continues with the answer itself, from memory. Resolving is exactly once
    because the resolution is committed before the run resumes; a run resumed from the row after a restart
    therefore gets the redacted answer (the answer was never written anywhere it could come back from), and its
    model sees ``‹redacted: password›`` and may ask again: the safe way round."""
    if row.kind != "ask_user" or not isinstance(resolution, Answer) or resolution.choice or not resolution.text:
        return resolution
    kind = asks_for_secret(str(row.payload.get("question") or row.prompt))
    if kind is None or yes_no(resolution.text) is not None:
        return resolution
    return resolution.model_copy(update={"text": keep_out(resolution.text, kind)})

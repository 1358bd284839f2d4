"""Taking a file in: time and memory to stream an attachment to disk, sniff and store it (MediaIntake).

The platform download is a generator of 64 KB chunks (the network is not what is measured); each size is
taken ``--rounds`` times.  Peak memory is the high-water mark of the process (``ru_maxrss``) before and
after: it stays flat because a file is never held whole.  Prints ONE JSON line.

    python bench/media.py [--rounds 5]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import resource
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # runnable from a checkout

from bot.config.media import MediaSection
from bot.events import Attachment, ChatKey, InboundMessage, Sender
from bot.media.fetch import CHUNK
from bot.media.intake import MediaIntake

PDF_HEAD = b"%PDF-1.7\n"


class MemoryFetcher:
    def __init__(self, size: int) -> None:
        self.size = size
        self.block = bytes(CHUNK)

    async def chunks(self, attachment: Attachment) -> AsyncIterator[bytes]:
        sent = 0
        while sent < self.size:
            piece = (PDF_HEAD + self.block)[:CHUNK] if sent == 0 else self.block
            piece = piece[: self.size - sent]
            sent += len(piece)
            yield piece

    async def close(self) -> None:
        return None


class OneFetcher:
    """The downloader of every channel."""

    def __init__(self, fetcher: MemoryFetcher) -> None:
        self.fetcher = fetcher

    async def get(self, channel: str) -> MemoryFetcher:
        return self.fetcher


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


async def main(rounds: int) -> None:
    result: dict[str, object] = {"peak_rss_mb_before": round(peak_mb(), 1)}
    with tempfile.TemporaryDirectory() as tmp:
        for mb in (1, 10, 19):
            intake = MediaIntake(MediaSection(), Path(tmp), OneFetcher(MemoryFetcher(mb * 1024 * 1024)))
            samples = []
            for n in range(rounds):
                event = InboundMessage(
                    id=f"{mb}-{n}",
                    chat=ChatKey(channel="telegram", chat_id="1"),
                    sender=Sender(id="1"),
                    text="read this",
                    attachments=(Attachment(kind="document", name="x.pdf", ref="f"),),
                )
                began = time.perf_counter()
                prepared = await intake.prepare(event)
                samples.append(time.perf_counter() - began)
                assert prepared.media and not prepared.refused
            median = statistics.median(samples)
            result[f"{mb}mb"] = {"ms": round(median * 1000, 1), "mb_per_s": round(mb / median, 1)}
    result["peak_rss_mb_after"] = round(peak_mb(), 1)
    print(json.dumps(result))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=5)
    asyncio.run(main(parser.parse_args().rounds))

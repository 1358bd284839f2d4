"""The ``media`` section: what files people may send the bot, how big, and how long they are kept."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

MB = 1024 * 1024


class MediaSection(BaseModel):
    model_config = ConfigDict(extra="forbid")

    enabled: bool = True
    """Download photos, voice notes and documents people send, and give them to the model."""
    max_image_mb: float = Field(10, gt=0)
    max_audio_mb: float = Field(20, gt=0)
    max_document_mb: float = Field(20, gt=0)
    keep_hours: float = Field(72, gt=0)
    """Files are deleted this long after they arrived; later turns then see a note that they are gone."""
    inline_max_mb: float = Field(14, gt=0)
    """Files up to this size go to the model inside the request; larger ones through the provider's file upload."""
    history_items: int = Field(4, ge=0)
    """The most recent files from earlier turns the model sees again (0: only the current message's)."""
    transcribe: Literal["model", "off"] = "model"
    """Voice notes: ``model`` asks the configured model for the words (stored in history, used for routing);
    ``off`` keeps only a note that a voice note came."""

    def limit(self, kind: str) -> int:
        """The largest accepted file of ``kind`` (image, audio, document), in bytes."""
        mb = {"image": self.max_image_mb, "audio": self.max_audio_mb}.get(kind, self.max_document_mb)
        return int(mb * MB)

    def accepted(self) -> str:
        """What people may send, for a refusal."""
        return (
            f"photos and images up to {self.max_image_mb:g} MB, voice notes and audio up to "
            f"{self.max_audio_mb:g} MB, PDFs and text files up to {self.max_document_mb:g} MB"
        )

"""Files over the real discord.py client: an attachment is downloaded from the CDN and given to the model; a
voice message is transcribed; an oversized or lying file is refused; send_file attaches the file."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agents.models.scripted import ScriptedModel, call
from tests.fakes.discord_server import CHANNEL_ID, FakeDiscord, buttons

# Fixtures of that module, used by name below.
from tests.helpers.discord import fake, make_bot

JPEG = b"\xff\xd8\xff\xe0\x00\x10JFIF\x00" + bytes(range(256)) * 4
OGG = b"OggS\x00\x02" + bytes(500)
ELF = b"\x7fELF\x02\x01\x01" + bytes(600)


async def test_an_image_attachment_reaches_the_model(make_bot: Any, fake: FakeDiscord) -> None:
    bot = make_bot(mention_policy="all")
    model = ScriptedModel(["A mountain."])
    await bot.start(model)
    photo = fake.attachment(JPEG, "trip.jpg", "image/jpeg")
    await fake.message("where is this?", attachments=(photo,))
    assert await bot.replies(1) == ["A mountain."]
    [image] = model.requests[0].messages[-1].media
    assert (image.kind, image.mime_type, image.name) == ("image", "image/jpeg", "trip.jpg")
    assert Path(image.path).read_bytes() == JPEG and fake.downloads == [photo["id"]]


async def test_a_voice_message_is_transcribed_and_answered(make_bot: Any, fake: FakeDiscord) -> None:
    bot = make_bot(mention_policy="all")
    model = ScriptedModel(["tell me a joke", "Why did the chicken cross the road?"])
    await bot.start(model)
    await fake.message("", attachments=(fake.attachment(OGG, "voice-message.ogg", "audio/ogg"),))
    assert await bot.replies(1) == ["Why did the chicken cross the road?"]
    assert model.requests[1].messages[-1].text == "tell me a joke"


async def test_oversized_and_lying_files_are_refused(make_bot: Any, fake: FakeDiscord) -> None:
    bot = make_bot(mention_policy="all")
    await bot.start(ScriptedModel([]))
    await fake.message("", attachments=(fake.attachment(JPEG, "huge.jpg", "image/jpeg", size=30 * 1024 * 1024),))
    await fake.message("", attachments=(fake.attachment(ELF, "cat.jpg", "image/jpeg"),))
    first, second = await bot.replies(2)
    assert "huge.jpg (30.0 MB" in first and "I accept photos and images up to 10 MB" in first
    assert "cat.jpg (a program" in second
    assert len(fake.downloads) == 1, "the oversized one was never downloaded"


async def test_send_file_attaches_the_file(make_bot: Any, fake: FakeDiscord) -> None:
    bot = make_bot(mention_policy="all")
    model = ScriptedModel([call("send_file", {"path": "notes.txt", "caption": "your notes"}), "Sent."])
    gateway = await bot.start(model)
    workspace = Path(gateway.settings.tools.workspace)
    workspace.mkdir(parents=True, exist_ok=True)
    (workspace / "notes.txt").write_text("buy milk\n")
    await fake.message("@react send me my notes")
    await bot.replies(1)
    prompt = fake.message_with_buttons()  # sending a file out is confirmed first
    assert fake.uploads == []
    approve = next(b["custom_id"] for b in buttons(prompt) if "Approve" in b["label"])
    await fake.press(approve, message_id=prompt["id"])
    await fake.wait_for(lambda: "Sent." in fake.texts(CHANNEL_ID))
    await bot.settle()
    assert fake.uploads == [(CHANNEL_ID, "notes.txt", b"buy milk\n")]
    assert fake.texts(CHANNEL_ID)[-2:] == ["your notes", "Sent."]

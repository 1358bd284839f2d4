"""Behaviour of the learned router (``bot.routing.classifier``) and its training script.

Speed is measured by ``bench/routing_classifier.py``, not asserted here.
"""

from __future__ import annotations

import hashlib
import importlib.util
import math
import random
import sys
import unicodedata
from pathlib import Path
from types import ModuleType

import pytest

from bot.routing.classifier import (
    _LOWER_ASCII_TOKEN,
    _TOKEN,
    DEFAULT_PATH,
    WORD_MARK,
    IntentClassifier,
    Prediction,
    featurise,
)

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "bot" / "routing" / "corpus" / "train.tsv"
CORPUS_FILES = sorted((ROOT / "bot" / "routing" / "corpus").glob("*.tsv"))
DEV = ROOT / "tests" / "data" / "routing-dev.tsv"

# Clear-cut messages written for this test: in neither the training corpus nor the dev set.
CLEAR_CUT = {
    "chat": [
        "Good evening! How has your day been?",
        "Why do zebras have stripes?",
        "Can you explain what a compiler does?",
        "Write a short poem about spring rain.",
        "What does `chmod 644` mean?",
        "Any tips for staying focused while studying?",
        "How do you say 'good luck' in Italian?",
        "Is it a good idea to plan a picnic in October?",
        "谢谢你，太有用了！",
        "企鹅为什么不怕冷？",
        "git cherry-pick 是什么意思？",
        "推荐几部好看的纪录片",
        "光合作用和呼吸作用有什么区别？",
    ],
    "react": [
        "What's the weather like in Stockholm right now?",
        "What time is it in Buenos Aires?",
        "How is AMZN trading today?",
        "Read package.yaml and tell me the version field.",
        "Run `ls -la` in the home directory.",
        "Ping github.io and report the latency.",
        "Search the logs for 'connection reset' errors from today.",
        "Send a message to the ops group: deploy finished.",
        "Remind me at 4:30 pm to pick up the dry cleaning.",
        "What's on my calendar for Friday?",
        "杭州现在下雨吗？",
        "执行 df -h 看看磁盘",
        "给运营群发消息：活动推迟到下周",
        "下午四点半提醒我取快递",
    ],
    "plan": [
        "Plan a 6-day trip to Norway with fjords, hikes and hotels.",
        "Organise our team's summer party: venue, food, music and invitations.",
        "Set up a new Go service with CI, Docker and monitoring, then deploy it to staging.",
        "Migrate our blog from Ghost to Astro and redirect the old URLs.",
        "Back up the database, then upgrade MySQL, then run the smoke tests.",
        "Make me a 5-week drawing practice plan with reminders every Saturday.",
        "Design and implement a feedback form with a database and email alerts.",
        "先备份网站数据，然后升级 WordPress，最后检查所有页面",
        "帮我筹备公司年会：场地、节目、抽奖、邀请函",
        "帮我规划一次西安五日游，包括景点、住宿和美食",
        "设计并实现一个预约系统，包括数据库、接口和管理后台",
        "制定一个六周的健身计划，每周一提醒我",
    ],
}


def _key(text: str) -> str:
    return " ".join(unicodedata.normalize("NFKC", text).casefold().split())


def _messages(path: Path) -> set[str]:
    return {_key(line.split("\t", 1)[1]) for line in path.read_text(encoding="utf-8").splitlines() if "\t" in line}


def _train_module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("train_router", ROOT / "scripts" / "train_router.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["train_router"] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def clf() -> IntentClassifier:
    return IntentClassifier.load()


def test_loads_the_packaged_artefact(clf: IntentClassifier) -> None:
    assert clf.labels == ("chat", "react", "plan")
    assert clf.version.startswith("router-v1+")
    assert IntentClassifier.load(DEFAULT_PATH).version == clf.version


def test_artefact_was_trained_on_the_current_corpus(clf: IntentClassifier) -> None:
    corpus = clf.meta["corpus"]
    assert corpus["sha256"] == hashlib.sha256(b"".join(p.read_bytes() for p in CORPUS_FILES)).hexdigest()
    rows = [line for p in CORPUS_FILES for line in p.read_text(encoding="utf-8").splitlines()]
    assert corpus["lines"] == sum(1 for line in rows if line.strip() and not line.startswith("#"))


def test_the_dev_set_and_these_examples_are_not_in_the_training_corpus() -> None:
    corpus = set().union(*(_messages(p) for p in CORPUS_FILES))
    assert not corpus & _messages(DEV)
    assert not corpus & {_key(text) for texts in CLEAR_CUT.values() for text in texts}


@pytest.mark.parametrize(("label", "text"), [(label, text) for label, texts in CLEAR_CUT.items() for text in texts])
def test_clear_cut_messages(clf: IntentClassifier, label: str, text: str) -> None:
    assert clf.predict(text).label == label


def test_prediction_shape_and_ranges(clf: IntentClassifier) -> None:
    for text in ("hi", "read config.yaml", "plan a trip to Lisbon: flights, hotel, and a day-by-day itinerary"):
        p = clf.predict(text)
        assert isinstance(p, Prediction)
        assert set(p.scores) == set(clf.labels)
        assert math.isclose(sum(p.scores.values()), 1.0, rel_tol=1e-9)
        assert all(0.0 <= v <= 1.0 for v in p.scores.values())
        assert 100 / 3 <= p.confidence <= 100.0
        assert math.isclose(p.confidence, max(p.scores.values()) * 100)
        assert p.scores[p.label] == max(p.scores.values())


@pytest.mark.parametrize("text", ["", "   ", "\n\t", "🙂", "？？？", "0000", "\x00\x01"])
def test_empty_and_odd_text_does_not_crash(clf: IntentClassifier, text: str) -> None:
    p = clf.predict(text)
    assert p.label in clf.labels
    assert 0.0 <= p.confidence <= 100.0


def test_only_the_prefix_of_a_huge_message_is_read(clf: IntentClassifier) -> None:
    limit = clf.settings.max_chars
    head = "run `uptime` on the build server " * 100
    huge = head + "x" * 2**20  # a 1 MB message
    assert clf.logits(huge) == clf.logits(huge[:limit])
    assert clf.predict(huge).label in clf.labels
    cjk = "帮我规划一次旅行" * 200_000
    assert clf.logits(cjk) == clf.logits(cjk[:limit])


def test_the_ascii_tokeniser_splits_lower_case_ascii_as_the_general_one() -> None:
    """The scorer tokenises lower-case ASCII text with explicit classes: the same tokens (``\\s`` includes
    ``\\x1c``-``\\x1f`` there too), for every pair of ASCII characters and random strings of them."""
    chars = [chr(i) for i in range(128) if not chr(i).isupper()]
    texts = [a + b for a in chars for b in chars]
    rnd = random.Random(7)
    texts += ["".join(rnd.choices(chars, k=rnd.randint(0, 40))) for _ in range(20_000)]
    for text in texts:
        assert _LOWER_ASCII_TOKEN.findall(text) == _TOKEN.findall(text), repr(text)


def test_fast_scorer_matches_the_reference_featuriser(clf: IntentClassifier) -> None:
    """``logits`` (concatenated n-grams, token cache) must equal scoring ``featurise`` output naively."""
    rows = CORPUS.read_text(encoding="utf-8").splitlines()[::37]
    texts = [row.split("\t", 1)[1] for row in rows] + [t for ts in CLEAR_CUT.values() for t in ts] + ["", "a b"]
    fresh = IntentClassifier.load()  # the run-time token memo of the module fixture must not matter either
    for text in texts:
        known = [
            v
            for v in (clf._words.get(f[1:]) if f.startswith(WORD_MARK) else clf._chars.get(f) for f in featurise(text))
            if v is not None
        ]
        reference = clf._bias + (sum(known, 0j) / math.sqrt(len(known)) if known else 0j)
        assert abs(clf.logits(text) - reference) < 1e-9, text
        assert abs(fresh.logits(text) - reference) < 1e-9, text


def test_training_is_deterministic(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    train = _train_module()
    lines = CORPUS.read_text(encoding="utf-8").splitlines()[::9]
    corpus = tmp_path / "slice.tsv"
    corpus.write_text("\n".join(lines) + "\n", encoding="utf-8")
    outputs = []
    for name in ("a.json", "b.json"):
        out = tmp_path / name
        train.main(["--corpus", str(corpus), "--out", str(out), "--epochs", "3", "--folds", "2"])
        outputs.append(out.read_bytes())
    capsys.readouterr()
    assert outputs[0] == outputs[1]
    small = IntentClassifier.load(tmp_path / "a.json")
    assert small.meta["corpus"]["lines"] == len(lines)
    assert small.predict("hello there").label in small.labels

"""Deterministic embeddings for the fake model servers: one dimension per topic (a text scores on a topic when it
contains one of its words) plus one constant dimension, so texts that share a topic but no word are neighbours."""

from __future__ import annotations

import re

DEFAULT_TOPICS: dict[str, tuple[str, ...]] = {
    "pets": ("dog", "puppy", "retriever", "cat", "kitten", "pet", "vet"),
    "food": ("vegetarian", "vegan", "meat", "dinner", "cook", "restaurant", "lunch", "curry"),
    "travel": ("flight", "trip", "travel", "airport", "hotel", "tokyo", "paris"),
}


def embed(text: str, topics: dict[str, tuple[str, ...]] = DEFAULT_TOPICS) -> list[float]:
    words = set(re.findall(r"\w+", text.lower()))
    return [0.1, *(1.0 if words & set(about) else 0.0 for about in topics.values())]

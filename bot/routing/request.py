"""The request in a long message: what the person asks, without what they pasted.

A message of 2,000 characters is mostly a pasted log, query, text or list, and a sentence or two of request
before or after it ("why does this crash?", "make this faster", "translate this into French"). Routing a long
text as a whole gets it wrong both ways: its length looks like a plan to the classifier (8 of 13 long messages
went to ``plan``, a wedding toast among them), and the encoder reads only its start. So the classifier and the
encoder read the request: the prose lines (a line of a log, a stack trace, code, a query or a table is
skipped), their head and their tail when that is still long. The triggers still read the whole routed text
(a ``ValueError`` deep in a pasted trace is evidence for a debugger).
"""

from __future__ import annotations

import re

SHORT = 300
"""A text this long or shorter is its own request."""
HEAD, TAIL = 100, 150
"""Of longer prose: its first and last characters (a request comes first or last)."""

_FENCE = re.compile(r"^\s*(```|~~~)")
_PASTED = re.compile(
    r"""^\s*(
        \d{4}-\d{2}-\d{2}                               # a dated log line
      | \[?\d{1,2}:\d{2}:\d{2}                          # a timed one
      | (?:DEBUG|INFO|WARN|WARNING|ERROR|FATAL|TRACE)\b[\s:\]|]   # a levelled one
      | File\ "[^"]+",\ line\ \d+                       # a Python frame
      | at\ [\w$.<>]+\(                                 # a Java / JS frame
      | Traceback\ \(most\ recent                       # a Python trace
      | \w+(?:Error|Exception)\b:?                      # an exception line
      | (?:SELECT|FROM|WHERE|JOIN|LEFT|INNER|GROUP\ BY|ORDER\ BY|INSERT|UPDATE|DELETE|CREATE|ALTER|WITH|AND|OR|LIMIT)\b
      | [-*+|>#$]\s*\S                                  # a list item, table row, quote, heading, prompt
      | [a-f0-9]{7,40}\s                                # a commit hash
      | [{}\[\]()<;]                                    # code
    )""",
    re.VERBOSE,
)
_LETTER = re.compile(r"[^\W\d_]")


def ask_of(request: str) -> str:
    """What the character n-gram classifier reads of a request: the tail of a long one (its ask: "can you make it
    funnier?"). That classifier was trained on short messages, and a long text's many words read as a plan to it
    (a wedding toast with its date and guests: plan 99.8 %); the encoder reads the whole request."""
    if len(request) <= HEAD + TAIL:
        return request
    return request[-TAIL:]


def request_of(text: str) -> str:
    """What to route ``text`` by: itself when short, else its prose's head and tail."""
    if len(text) <= SHORT:
        return text
    prose: list[str] = []
    fenced = False
    for line in text.splitlines():
        if _FENCE.match(line):
            fenced = not fenced
            continue
        stripped = line.strip()
        if fenced or not stripped or _pasted(stripped, line):
            continue
        prose.append(stripped)
    request = " ".join(prose)
    if not request:  # nothing but the pasted part: its start says what it is
        return text[:SHORT]
    if len(request) <= HEAD + TAIL:
        return request
    return f"{request[:HEAD]} … {request[-TAIL:]}"


def _pasted(stripped: str, line: str) -> bool:
    if _PASTED.match(line) or line.startswith(("    ", "\t")):
        return True
    letters = len(_LETTER.findall(stripped))
    return letters < 0.6 * len(stripped.replace(" ", ""))  # mostly digits and symbols: data, not words

"""The debug → fix → review chain of the P2 design, as scripted model steps."""

from __future__ import annotations

from typing import Any

from agents.models.base import ModelResponse, Usage
from agents.models.scripted import call

AUTH_TS = "export function login(user) {\n  return user.name.trim();\n}\n"
FIXED_TS = "export function login(user) {\n  if (!user) return null;\n  return user.name.trim();\n}\n"
ANALYSIS = {"can_auto_fix": True, "needs_human": False, "file": "auth.ts", "line": 45, "cause": "user may be null"}
FIX = {"applied": True, "files": ["auth.ts"], "summary": "null check"}
VERDICT = '{"verdict": "approve", "summary": "Changes approved"}'


def transfer(target: str, reason: str, payload: dict[str, Any], id: str) -> ModelResponse:
    return call(f"transfer_to_{target.replace('-', '_')}", {"reason": reason, "payload": payload}, id=id)


def used(response: ModelResponse, tokens_in: int, tokens_out: int) -> ModelResponse:
    return response.model_copy(update={"usage": Usage(input_tokens=tokens_in, output_tokens=tokens_out)})


def the_chain() -> list[Any]:
    """debug-analyzer reads auth.ts and hands off with its analysis; code-fixer writes the fix and hands off with
    it; code-reviewer approves."""
    return [
        used(call("read_file", {"path": "auth.ts"}, id="r1"), 1234, 567),
        transfer("code-fixer", "Found issue: null pointer in auth.ts:45", {"analysis": ANALYSIS}, "h1"),
        call("write_file", {"path": "auth.ts", "content": FIXED_TS}, id="w1"),
        transfer("code-reviewer", "Added null check", {"fix": FIX}, "h2"),
        VERDICT,
    ]

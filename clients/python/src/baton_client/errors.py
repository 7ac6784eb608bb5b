"""The one error every call raises for a hub's refusal: branch on its stable ``code``."""

from __future__ import annotations

from typing import Any


class BatonError(Exception):
    """A hub's error answer, ``{ error, code, fix, ...context }``, with its HTTP status.

    ``code`` is stable (docs/errors.md lists every one); ``fix`` says what to do; ``context``
    holds the rest of the body (a conflict's ``state`` and ``version``, a refusal's ``reason``).
    A failure that never reached a hub has status 0 and code ``network``.
    """

    def __init__(
        self,
        code: str,
        message: str,
        *,
        status: int = 0,
        fix: str | None = None,
        context: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
        self.status = status
        self.fix = fix
        self.context: dict[str, Any] = dict(context or {})

    @classmethod
    def from_body(cls, body: Any, status: int) -> "BatonError":
        """The error a hub's answer describes; a body without a code is ``internal``."""
        if not isinstance(body, dict) or not isinstance(body.get("code"), str):
            return cls("internal", f"the hub answered {status} without an error code", status=status)
        context = {k: v for k, v in body.items() if k not in ("error", "code", "fix")}
        return cls(
            body["code"],
            str(body.get("error", body["code"])),
            status=status,
            fix=body.get("fix") if isinstance(body.get("fix"), str) else None,
            context=context,
        )

    def __getitem__(self, key: str) -> Any:
        return self.context[key]

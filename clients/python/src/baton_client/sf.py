"""RFC 8941 structured fields: the dictionaries and inner lists of Signature-Input and Signature.

Strict like the hub's parser: what it refuses, this refuses, so a verifier here and the hub agree.
"""

from __future__ import annotations

import base64
import re
from dataclasses import dataclass, field
from typing import Union


class StructuredFieldError(ValueError):
    """A structured field that does not parse or cannot be serialized."""


@dataclass(frozen=True)
class Token:
    """An sf-token (RFC 8941 §3.3.4)."""

    value: str


BareItem = Union[int, str, bytes, bool, Token]
Params = list[tuple[str, BareItem]]


@dataclass
class Item:
    value: BareItem
    params: Params = field(default_factory=list)


@dataclass
class InnerList:
    items: list[Item]
    params: Params = field(default_factory=list)


Dictionary = list[tuple[str, Union[Item, InnerList]]]

_KEY = re.compile(r"[a-z*][a-z0-9_.*-]*")
_INTEGER = re.compile(r"-?[0-9]{1,15}")
_BYTES = re.compile(r":([A-Za-z0-9+/]*={0,2}):")
_TOKEN = re.compile(r"[A-Za-z*][\x21\x23-\x27\x2a\x2b\x2d-\x3a\x41-\x5a\x5e-\x7a\x7c\x7e]*")
_PRINTABLE = re.compile(r"[\x20-\x7e]*")


def serialize_bare_item(v: BareItem) -> str:
    if isinstance(v, bool):
        return "?1" if v else "?0"
    if isinstance(v, int):
        # RFC 8941 §4.1.4: at most 15 digits.
        if abs(v) > 999_999_999_999_999:
            raise StructuredFieldError(f"not an sf-integer: {v}")
        return str(v)
    if isinstance(v, str):
        if not _PRINTABLE.fullmatch(v):
            raise StructuredFieldError("sf-string must be printable ASCII")
        return '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(v, (bytes, bytearray)):
        return ":" + base64.b64encode(bytes(v)).decode("ascii") + ":"
    if isinstance(v, Token):
        if not _TOKEN.fullmatch(v.value):
            raise StructuredFieldError(f"not an sf-token: {v.value}")
        return v.value
    raise StructuredFieldError(f"not a bare item: {v!r}")


def serialize_params(params: Params) -> str:
    out = ""
    for key, value in params:
        if not _KEY.fullmatch(key):
            raise StructuredFieldError(f"not an sf-key: {key}")
        # RFC 8941 §4.1.1.2: a true boolean parameter is its key alone.
        out += f";{key}" if value is True else f";{key}={serialize_bare_item(value)}"
    return out


def serialize_item(item: Item) -> str:
    return serialize_bare_item(item.value) + serialize_params(item.params)


def serialize_inner_list(inner: InnerList) -> str:
    items = " ".join(serialize_item(i) for i in inner.items)
    return f"({items}){serialize_params(inner.params)}"


def serialize_dictionary(d: Dictionary) -> str:
    parts = []
    for key, member in d:
        if not _KEY.fullmatch(key):
            raise StructuredFieldError(f"not an sf-key: {key}")
        if isinstance(member, InnerList):
            parts.append(f"{key}={serialize_inner_list(member)}")
        elif member.value is True:
            parts.append(key + serialize_params(member.params))
        else:
            parts.append(f"{key}={serialize_item(member)}")
    return ", ".join(parts)


class _Parser:
    def __init__(self, s: str) -> None:
        self.s = s
        self.i = 0

    def fail(self, what: str) -> None:
        raise StructuredFieldError(f"{what} at offset {self.i}")

    def peek(self) -> str | None:
        return self.s[self.i] if self.i < len(self.s) else None

    def skip_sp(self) -> None:
        while self.peek() == " ":
            self.i += 1

    def skip_ows(self) -> None:
        while self.peek() in (" ", "\t"):
            self.i += 1

    def take(self, pattern: re.Pattern[str]) -> re.Match[str] | None:
        m = pattern.match(self.s, self.i)
        if m:
            self.i = m.end()
        return m

    def key(self) -> str:
        m = self.take(_KEY)
        if not m:
            self.fail("expected a key")
        assert m
        return m.group(0)

    def bare_item(self) -> BareItem:
        c = self.peek()
        if c is not None and (c == "-" or "0" <= c <= "9"):
            m = self.take(_INTEGER)
            if not m:
                self.fail("expected an integer")
            assert m
            if self.peek() == ".":
                self.fail("decimals are not accepted")
            return int(m.group(0))
        if c == '"':
            self.i += 1
            out = []
            while True:
                ch = self.peek()
                if ch is None:
                    self.fail("unterminated string")
                assert ch is not None
                if ch == '"':
                    self.i += 1
                    return "".join(out)
                if ch == "\\":
                    nxt = self.s[self.i + 1] if self.i + 1 < len(self.s) else None
                    if nxt not in ('"', "\\"):
                        self.i += 1
                        self.fail("bad escape in string")
                    assert nxt is not None
                    out.append(nxt)
                    self.i += 2
                    continue
                if not " " <= ch <= "~":
                    self.i += 1
                    self.fail("non-printable character in string")
                out.append(ch)
                self.i += 1
        if c == ":":
            m = self.take(_BYTES)
            if not m or len(m.group(1)) % 4 != 0:
                self.fail("expected a byte sequence")
            assert m
            return base64.b64decode(m.group(1), validate=True)
        if c == "?":
            v = self.s[self.i + 1] if self.i + 1 < len(self.s) else None
            if v not in ("0", "1"):
                self.fail("expected a boolean")
            self.i += 2
            return v == "1"
        m = self.take(_TOKEN)
        if not m:
            self.fail("expected an item")
        assert m
        return Token(m.group(0))

    def params(self) -> Params:
        out: Params = []
        while self.peek() == ";":
            self.i += 1
            self.skip_sp()
            key = self.key()
            value: BareItem = True
            if self.peek() == "=":
                self.i += 1
                value = self.bare_item()
            out = [(k, v) for k, v in out if k != key]
            out.append((key, value))
        return out

    def inner_list(self) -> InnerList:
        self.i += 1
        items: list[Item] = []
        while True:
            self.skip_sp()
            if self.peek() == ")":
                self.i += 1
                return InnerList(items, self.params())
            value = self.bare_item()
            items.append(Item(value, self.params()))
            if self.peek() not in (" ", ")"):
                self.fail("expected a space or ) in an inner list")


def parse_dictionary(value: str) -> Dictionary:
    """Parses a dictionary field value strictly (RFC 8941 §4.2.2)."""
    p = _Parser(value)
    out: Dictionary = []
    p.skip_sp()
    if p.peek() is None:
        return out
    while True:
        key = p.key()
        member: Item | InnerList
        if p.peek() == "=":
            p.i += 1
            if p.peek() == "(":
                member = p.inner_list()
            else:
                v = p.bare_item()
                member = Item(v, p.params())
        else:
            member = Item(True, p.params())
        out = [(k, m) for k, m in out if k != key]
        out.append((key, member))
        p.skip_ows()
        if p.peek() is None:
            return out
        if p.peek() != ",":
            p.fail("expected a comma")
        p.i += 1
        p.skip_ows()
        if p.peek() is None:
            p.fail("trailing comma")

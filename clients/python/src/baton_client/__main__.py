"""``python -m baton_client``: make an identity, or send one signed request as the seed's client
does (``request <discovery-url> <identity-file> METHOD PATH [body-file]``)."""

from __future__ import annotations

import argparse
import json
import sys

from .client import BatonClient, discovery_url_of
from .errors import BatonError
from .identity import create_identity, load_identity, save_identity


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="baton-py", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    init = sub.add_parser("identity-init", help="make a new identity file (mode 0600)")
    init.add_argument("--hub", required=True, help="the hub's discovery URL or origin")
    init.add_argument("--out", required=True, help="where to write the identity file")
    init.add_argument("--name", help="the display label you mean to set once admitted")
    req = sub.add_parser("request", help="send one signed request and print its JSON answer")
    req.add_argument("discovery_url")
    req.add_argument("identity_file")
    req.add_argument("method")
    req.add_argument("path")
    req.add_argument("body_file", nargs="?")
    args = parser.parse_args(argv)
    try:
        if args.command == "identity-init":
            identity = create_identity(discovery_url_of(args.hub), args.name)
            save_identity(args.out, identity)
            print(json.dumps({"principal": identity.principal, "file": args.out}))
            return 0
        client = BatonClient.from_file(args.discovery_url, args.identity_file)
        body = None
        if args.body_file:
            with open(args.body_file, "rb") as f:
                body = f.read()
        res = client.request(args.method.upper(), args.path, body)
        print(json.dumps(res.body, indent=2))
        print(f"HTTP {res.status}", file=sys.stderr)
        return 0 if res.status < 400 else 1 if res.status < 500 else 2
    except BatonError as error:
        print(json.dumps({"error": error.message, "code": error.code, "fix": error.fix}), file=sys.stderr)
        return 2 if error.status == 0 or error.status >= 500 else 1


if __name__ == "__main__":
    sys.exit(main())

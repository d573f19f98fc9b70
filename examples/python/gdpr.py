#!/usr/bin/env python3
"""GDPR for one subject: export everything held about it to a file (art. 15/20),
erase it (art. 17), and print the erasure receipt once the erasure completed.

Environment:
  MNEMO_URL    mnemo server (default http://127.0.0.1:8080)
  MNEMO_TOKEN  a token with gdpr:export and gdpr:erase

Usage:
  python gdpr.py SUBJECT [--out export.json] [--keep]   (--keep: export only)
"""

from __future__ import annotations

import argparse
import sys

from mnemo_client import MnemoClient


def main(argv: "list[str] | None" = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("subject")
    parser.add_argument("--out", help="where to write the export (default SUBJECT-export.json)")
    parser.add_argument("--keep", action="store_true", help="export only, do not erase")
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds to wait for the erasure")
    args = parser.parse_args(argv)
    out = args.out or f"{args.subject}-export.json"

    with MnemoClient() as mnemo:
        export = mnemo.export_subject(args.subject)
        with open(out, "w", encoding="utf-8") as f:
            f.write(export.model_dump_json(by_alias=True, indent=2))
        print(
            f"exported {export.counts.messages} messages and {export.counts.memories} memories "
            f"of {args.subject} to {out}",
            file=sys.stderr,
        )
        if args.keep:
            return 0

        erasure = mnemo.erase_subject(args.subject)
        print(f"erasure {erasure.erasure_id} requested; waiting for its receipt", file=sys.stderr)
        status = mnemo.wait_for_erasure(erasure.erasure_id, timeout=args.timeout)
        assert status.receipt is not None
        print(status.receipt.model_dump_json(indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Regenerate the README's generated blocks: the config reference (from the dataclasses every
scenario key is validated into) and the performance tables (from bench/results/*.json).

    python docs/update_readme.py          # rewrite README.md in place
    python docs/update_readme.py --check  # exit 1 if README.md is stale (used by the tests)
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"


def config_reference() -> str:
    from skyswarm.core.config import CORE_SECTIONS
    from skyswarm.core.mission import available_missions, resolve_mission
    from skyswarm.core.schema import reference_markdown

    parts = ["### Core sections", "", reference_markdown(CORE_SECTIONS)]
    seen: set[str] = set(CORE_SECTIONS)
    for name in sorted(available_missions()):
        cls = resolve_mission(name)
        own = {k: v for k, v in cls.sections.items() if k not in seen}
        tables = {k: v for k, v in own.items() if hasattr(v, "__dataclass_fields__")}
        lists = {
            k: v.__args__[0]
            for k, v in own.items()
            if k not in tables and getattr(v, "__args__", None)
        }
        if not (tables or lists):
            continue
        seen |= set(own)
        parts += [f"### Sections of `{name}`", "", reference_markdown({**tables, **lists})]
    return "\n".join(parts).rstrip() + "\n"


def replace_block(text: str, marker: str, body: str) -> str:
    pattern = re.compile(rf"(<!-- {marker}:start -->\n).*?(<!-- {marker}:end -->)", re.S)
    if not pattern.search(text):
        raise SystemExit(f"README.md has no <!-- {marker}:start/end --> block")
    return pattern.sub(lambda m: m.group(1) + body + m.group(2), text)


def main() -> int:
    text = README.read_text(encoding="utf-8")
    new = replace_block(text, "config-reference", config_reference())
    if "--check" in sys.argv:
        if new != text:
            print("README.md config reference is stale: run python docs/update_readme.py")
            return 1
        return 0
    README.write_text(new, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())

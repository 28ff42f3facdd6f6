"""Run a Markdown page's ```python blocks as notebook cells, in order, in one namespace.

    python .ci/doc_cells.py docs/python.md            # run; print each cell's output; fail on any error
    python .ci/doc_cells.py docs/python.md --write    # the same, then put each cell's output in the
                                                      # ```text block right after it (made if missing)

A cell's output is what it wrote to stdout and stderr, interleaved as a
console shows it: a progress bar's redraws (carriage returns) collapse to
their last state. Run from the repository root (the page's paths are
relative to it) with the environment the page names (PRIVBOOST_URL,
PRIVBOOST_API_KEY, PRIVBOOST_BINARY). --write is how docs/python.md's
outputs are produced: by running it, never by hand. CI (.ci/python-client)
runs it without --write, so the page's code keeps working; the outputs
themselves are noisy by design and are not compared.
"""

from __future__ import annotations

import contextlib
import io
import re
import sys
import traceback
from pathlib import Path

FENCE = re.compile(r"^```(\w*)\s*$")


def blocks(lines: list[str]) -> list[tuple[str, int, int]]:
    """(language, first line of the body, line after the closing fence) of every fenced block."""
    found, i = [], 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if m and m.group(1):
            j = i + 1
            while j < len(lines) and lines[j].rstrip() != "```":
                j += 1
            if j == len(lines):
                sys.exit(f"unclosed ``` block at line {i + 1}")
            found.append((m.group(1), i + 1, j + 1))
            i = j + 1
        else:
            i += 1
    return found


def console(text: str) -> str:
    """What a terminal shows: each line's last carriage-return segment, trailing spaces dropped."""
    out = []
    for line in text.split("\n"):
        segments = [s for s in line.split("\r") if s.strip()]
        out.append((segments[-1] if segments else "").rstrip())
    while out and not out[-1]:
        out.pop()
    return "\n".join(out)


class Console(io.StringIO):
    """A UTF-8 console's buffer (tqdm draws its bar with block characters, as in a terminal, not '#')."""

    encoding = "utf-8"


def main() -> int:
    args = [a for a in sys.argv[1:] if a != "--write"]
    write = "--write" in sys.argv[1:]
    if len(args) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    path = Path(args[0])
    lines = path.read_text(encoding="utf-8").split("\n")
    found = blocks(lines)
    cells = [(start, end) for lang, start, end in found if lang == "python"]
    if not cells:
        sys.exit(f"{path} has no ```python blocks")
    namespace: dict = {"__name__": "__main__"}
    outputs = []
    for n, (start, end) in enumerate(cells, 1):
        source = "\n".join(lines[start : end - 1]) + "\n"
        print(f"-- cell {n}/{len(cells)} ({path}:{start})", flush=True)
        buffer = Console()
        try:
            with contextlib.redirect_stdout(buffer), contextlib.redirect_stderr(buffer):
                exec(compile(source, f"{path}:{start}", "exec"), namespace)  # noqa: S102 - the page's own code
        except BaseException:
            print(console(buffer.getvalue()))
            traceback.print_exc()
            print(f"cell {n} ({path}:{start}) failed", file=sys.stderr)
            return 1
        text = console(buffer.getvalue())
        print(text, flush=True)
        outputs.append(text)
    if write:
        # Replace from the last cell up, so that earlier line numbers stay valid.
        by_start = {start: (lang, start, end) for lang, start, end in found}
        starts = sorted(by_start)
        for (start, end), text in reversed(list(zip(cells, outputs))):
            following = [s for s in starts if s > end]
            nxt = by_start[following[0]] if following else None
            between = lines[end : nxt[1] - 1] if nxt else []
            if nxt and nxt[0] == "text" and all(not line.strip() for line in between):
                lines[nxt[1] : nxt[2] - 1] = text.split("\n") if text else []
            elif text:
                lines[end:end] = ["", "```text", *text.split("\n"), "```"]
        path.write_text("\n".join(lines), encoding="utf-8")
        print(f"-- wrote the outputs of {len(cells)} cells into {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The pinned source references: facts copied from the project's `shared/reference_lines.json` into
`references.json` beside this file (repository, path, commit, lines, permalink, status); the one-line
descriptions are ours. No third-party code or prose is reproduced.
"""

import json
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from importlib.resources import files
from types import MappingProxyType


@dataclass(frozen=True)
class Reference:
    """A pinned line range in openai/gpt-2 or transformers (or a note that the code is absent)."""
    id: str
    repo: str
    path: str
    commit: str
    start: int | None
    end: int | None
    permalink: str | None
    status: str  # as verified for shared/reference_lines.json
    what: str  # our own one-line description
    candidates: tuple[tuple[int, int], ...] = ()  # the exact ranges, when the pinned one only covers them

    @property
    def absent(self) -> bool:
        return self.start is None

    @property
    def ambiguous(self) -> bool:
        return "AMBIGUOUS" in self.status

    @property
    def file_url(self) -> str:
        return f"https://github.com/{self.repo}/blob/{self.commit}/{self.path}"

    @property
    def lines(self) -> str:
        """`L102`, `L485-L629`, or `absent` (the file has no such code)."""
        if self.absent:
            return "absent"
        return f"L{self.start}" if self.start == self.end else f"L{self.start}-L{self.end}"

    @property
    def label(self) -> str:
        """One honest line for a link: where, which lines, and how sure we are."""
        where = f"{self.repo} {self.path.rsplit('/', 1)[-1]}"
        if self.absent:
            return f"{self.what.rstrip('.')} (no such code in {self.path})"
        if self.ambiguous:
            exact = " or ".join(f"L{s}-L{e}" if s != e else f"L{s}" for s, e in sorted(self.candidates))
            return f"{where} {self.lines} (covering range; the exact lines are {exact}, depending on the file version)"
        return f"{where} {self.lines}"


@lru_cache(maxsize=1)
def references() -> Mapping[str, Reference]:
    """Every pinned reference by our id, from the package's references.json."""
    doc = json.loads((files("gpt2viz.spec") / "references.json").read_text(encoding="utf-8"))
    out = {}
    for e in doc["references"]:
        cands = tuple(tuple(c) for c in e.get("candidates", ()))
        out[e["id"]] = Reference(e["id"], e["repo"], e["path"], e["commit"], e["start"], e["end"],
                                 e["permalink"], e["status"], e["what"], cands)
    return MappingProxyType(out)

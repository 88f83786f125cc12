"""How wide a sweep runs: every item, or the named sample that the README's test command checks.

A sweep repeats one check over every page, size, stop or mode. The README's test command (CI, every landing)
checks each sweep on a sample that names every kind of view it holds (a page of cards, the drawn model, maps,
controls, tables, a lesson), so that the whole run stays within CI's 20 minutes on a 2-core machine;
`GPT2VIZ_FULL=1` runs every item (run it after a change to a page's layout and before a release: the README
says how long it takes). A sample names its items, so a renamed page fails here rather than dropping out.
"""

import os

FULL = os.environ.get("GPT2VIZ_FULL", "") == "1"


def sweep(items, sample, key=lambda item: item) -> list:
    """`items` whole under GPT2VIZ_FULL=1, else those whose key is in `sample` (every name in it must be one)."""
    items = list(items)
    unknown = set(sample) - {key(item) for item in items}
    assert not unknown, f"the sample names what the sweep does not hold: {sorted(map(str, unknown))}"
    return items if FULL else [item for item in items if key(item) in sample]

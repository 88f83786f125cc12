"""The page registry: one row per page, and everything else derived from it (navigation sections,
which page hosts which component, what the app tests expect of each page).

The folder is views/, not pages/: Streamlit treats a pages/ folder beside the entry script as an
old-style multipage app and would run those files without app.py."""

from dataclasses import dataclass, field

from .paths import APP_ROOT

ROOT = APP_ROOT / "views"
DEFAULT = "overview"


@dataclass(frozen=True)
class PageRow:
    url: str  # url path; the file is views/{url}.py
    title: str  # in the navigation (and the h1 of a page without a component)
    icon: str
    section: str
    component: str | None = None  # the catalogue component the page is about; its title is the h1
    charts: int = 0  # the charts the page draws at least, in every mode
    hosts: dict[str, dict[str, str]] = field(default_factory=dict)  # other components shown here, with
    # the query parameters that select them ({"block.ln2": {"ln": "ln_2"}})
    handout: bool = True  # "Download this page" is offered (False: a page of text or forms, no charts to keep)

    @property
    def file(self) -> str:
        return f"views/{self.url}.py"


PAGES = (
    PageRow("start", "Start here", ":material/flag:", "Start", handout=False),
    PageRow("overview", "Overview", ":material/map:", "The model", "model", 2),
    PageRow("tokens", "Tokens and embeddings", ":material/abc:", "The model", "embed", 2),
    PageRow("block", "Transformer block", ":material/view_agenda:", "The model", "block", 2),
    PageRow("layernorm", "LayerNorm", ":material/straighten:", "The model", "block.ln1", 3,
            {"block.ln2": {"ln": "ln_2"}, "ln_f": {"ln": "ln_f"}}),
    PageRow("attention", "Attention", ":material/visibility:", "The model", "block.attn", 2),
    PageRow("merge", "Merge and project", ":material/merge:", "The model", "block.attn.merge", 3),
    PageRow("mlp", "MLP", ":material/hub:", "The model", "block.mlp", 3),
    PageRow("output", "Output", ":material/target:", "The model", "unembed", 2),
    PageRow("modes", "Modes and KV cache", ":material/memory:", "The model", charts=2),
    PageRow("params", "Parameter accounting", ":material/calculate:", "The model", charts=1),
    PageRow("generation", "Generation, step by step", ":material/play_arrow:", "Classroom", charts=3),
    PageRow("training", "Training internals", ":material/school:", "Classroom", charts=3),
    PageRow("lens", "Logit lens", ":material/search:", "Classroom", charts=2),
    PageRow("whatif", "What if", ":material/block:", "Classroom", charts=3),
    PageRow("attribution", "Who wrote the answer", ":material/edit_note:", "Classroom", charts=2),
    PageRow("paths", "Which path carries it", ":material/route:", "Classroom", charts=1),
    PageRow("patch", "Compare and patch", ":material/compare_arrows:", "Classroom", charts=4),
    PageRow("experiments", "Experiments", ":material/science:", "Classroom"),  # charts once a prediction is made
    PageRow("heads", "Head finder", ":material/manage_search:", "Classroom", charts=5),
    PageRow("exercises", "Exercises", ":material/quiz:", "Classroom", handout=False),
    PageRow("lesson", "Lessons", ":material/co_present:", "Classroom", handout=False),
    PageRow("glossary", "Glossary", ":material/menu_book:", "Reference", handout=False),
    PageRow("about", "About", ":material/info:", "Reference", handout=False),
)
BY_URL = {row.url: row for row in PAGES}


def sections() -> dict[str, list[PageRow]]:
    """The navigation's sections in the registry's order."""
    out: dict[str, list[PageRow]] = {}
    for row in PAGES:
        out.setdefault(row.section, []).append(row)
    return out


def href(url: str) -> str:
    """The address of a page: Streamlit serves the default page at the root only."""
    return "/" if url == DEFAULT else "/" + url


def home(cid: str, parents: dict[str, str | None]) -> tuple[PageRow, dict]:
    """The page that shows component `cid` (its own, one that hosts it, or its nearest ancestor's)
    and the query parameters that select it there. `parents`: component id -> parent id."""
    while cid is not None:
        for row in PAGES:
            if row.component == cid:
                return row, {}
            if cid in row.hosts:
                return row, dict(row.hosts[cid])
        cid = parents[cid]
    return BY_URL[DEFAULT], {}


def pages() -> dict[str, list]:
    """The st.Page objects of every section, for st.navigation. The Overview is the default page, which
    Streamlit serves at the root only; under its own name too (/overview, as a reader may type it, or a
    link may carry it), as a page hidden from the menu. Before, that address opened the Overview under
    a "Page not found" box the reader had to close."""
    import streamlit as st

    def page(row: PageRow, url_path: str, **how) -> st.Page:
        return st.Page(ROOT / f"{row.url}.py", title=row.title, url_path=url_path, icon=row.icon, **how)

    made = {section: [page(row, "" if row.url == DEFAULT else row.url, default=(row.url == DEFAULT)) for row in rows]
            for section, rows in sections().items()}
    made[BY_URL[DEFAULT].section].append(page(BY_URL[DEFAULT], DEFAULT, visibility="hidden"))
    return made

"""What the Lessons page and a lesson's bar say that is computed: a link's refusal when this server lacks
the lesson's weights (said to a student, who cannot fetch them), where the class is, and how many
lessons ship. Pure: names and counts in, text out."""

NUMBER_WORDS = {1: "one", 2: "two", 3: "three", 4: "four", 5: "five", 6: "six", 7: "seven", 8: "eight", 9: "nine"}


def missing_weights(source: str, name: str | None = None, checkpoint: str | None = None,
                    model_dirs_env: str = "") -> str:
    """What of a lesson's weights this server lacks, in a student's words: a folder, a source, a checkpoint."""
    if source == "folder":
        return (f"the model folder {name}, which this server does not list (its operator lists folders in "
                f"{model_dirs_env})")
    if source == "hf-cache":
        what = "GPT-2 small's weights (checkpoint gpt2)" if checkpoint == "gpt2" else f"the checkpoint {checkpoint}"
        return f"{what}, which this server does not have"
    return f"the {source} weights, which this server does not offer"


def lesson_refused(missing: str, checkpoint: str | None = None) -> str:
    """The line a student sees instead of the lesson: what is missing, who can fix it, and that the page
    below is the app's own default view, not the lesson."""
    fetch = f" (`python -m gpt2viz download {checkpoint}` fetches them)" if checkpoint else ""
    return (f"This lesson needs {missing}: tell your lecturer{fetch}. What follows is the app's own default view, "
            "not the lesson.")


def place(i: int, n: int, page_title: str) -> str:
    """Where the class is: "stop 3 of 6 · Output" (`i` from 0)."""
    return f"stop {i + 1} of {n} · {page_title}"


def stop_refused(asked: str, n: int) -> str:
    """A link's `stop` that is not one of the lesson's: the URL counts stops from 0, the page from 1.
    `asked`: as the page prints a visitor's text (a code span, so no Markdown in it draws)."""
    return (f"This link asks for stop={asked}, which this lesson does not have: the link counts its {n:,} "
            f"stops from 0 to {n - 1:,} (the page says stop 1 to {n:,}). Showing stop 1.")


def shipped_lessons(n: int) -> str:
    """The Lessons page's aside on lesson files, with the count of files in lessons/."""
    count = NUMBER_WORDS.get(n, f"{n:,}") if n else "none yet"
    return ("A lesson is also a small JSON or TOML file you can write by hand "
            f"(`lessons/` has {count}{' to start from' if n else ''}).")


def password_wait(seconds: float) -> str:
    return f"Too many wrong passwords from here: try again in {seconds:.0f} s."


def link_length(n: int, until: str | None) -> str:
    """Under a signed link: its length, and until when it works (`until` None: until the key changes)."""
    return f"{n:,} characters. " + (f"It works until {until}." if until else "It works until the server's key changes.")


SENTENCES = (missing_weights, lesson_refused, place, stop_refused, shipped_lessons, password_wait, link_length)

"""The numbers a core page prints for each named quantity, read back out of its notices and worked
example, beside the value its chart draws for that quantity (read out of the figure).

`quantities(url, texts, figures)` gives {quantity: (printed numbers, drawn value or None)}; `disagree`
lists what breaks "two notices never give one quantity two values, and each is the chart's": every
printed number must be the drawn value rounded to its printed precision, and, where no chart draws
the quantity, the printed numbers must agree with each other at their precisions."""

import re
from collections import defaultdict

import numpy as np

NUM = r"-?\d[\d,]*(?:\.\d+)?(?:e[-+]?\d+)?"


def value(number: str) -> float:
    return float(number.replace(",", ""))


def half_unit(number: str) -> float:
    """Half the last printed digit's unit: the rounding a printed number admits."""
    mantissa, _, exponent = number.replace(",", "").partition("e")
    decimals = len(mantissa.split(".")[1]) if "." in mantissa else 0
    return 0.5 * 10 ** (int(exponent or 0) - decimals)


def _figure(figures, starts: str):
    return next((f for f in figures if (f.layout.title.text or "").startswith(starts)), None)


def _bars(fig) -> np.ndarray:
    """The values of a bar chart's first trace, whichever axis carries them."""
    bar = fig.data[0]
    values = bar.x if bar.orientation == "h" else bar.y
    return np.asarray(values, dtype=np.float64)


def quantities(url: str, texts: list[str], figures=()) -> dict[str, tuple[list[str], float | None]]:
    said = " ".join(texts).replace("**", "")
    printed: dict[str, list[str]] = defaultdict(list)
    drawn: dict[str, float] = {}

    def find(quantity: str, pattern: str, group: int = 1) -> None:
        for m in re.finditer(pattern, said):
            printed[quantity].append(m.group(group))

    if url == "attention":
        for m in re.finditer(rf"key (\d+) .{{1,40}}?: e\^\([^)]*\) = {NUM}, and {NUM} ÷ {NUM} = ({NUM})", said):
            printed[f"a[last, {m.group(1)}]"].append(m.group(2))
        find("‖z‖ of the last query", rf"‖z‖ = ({NUM})")
        fig = next((f for f in figures if (f.layout.title.text or "").startswith("Attention ·")), None)
        if fig is not None:
            pattern, strip = np.asarray(fig.data[1].z, dtype=np.float64), np.asarray(fig.data[2].z, dtype=np.float64)
            for key in printed:
                if key.startswith("a[last"):
                    drawn[key] = pattern[-1, int(key.split(", ")[1][:-1])]
            drawn["‖z‖ of the last query"] = strip[-1, 0]
    elif url == "output":
        find("p(top)", rf"gets ({NUM});")
        find("p(top)", rf"goes from ({NUM}) to")
        find("p(top) after temperature and top-k", rf"goes from {NUM} to ({NUM})")
        find("p(first) / p(second)", rf"= ({NUM}) times as likely")
        find("top logit", rf"has logit ({NUM})")
        find("top logit", rf"cos θ = [^=]* = ({NUM})\.")
        if (fig := _figure(figures, "Next token after")) is not None:
            bars = _bars(fig)
            drawn["p(top)"], drawn["p(first) / p(second)"] = bars[0], bars[0] / bars[1]
        if (fig := _figure(figures, "temperature ")) is not None:
            drawn["p(top) after temperature and top-k"] = _bars(fig)[0]
    elif url == "mlp":
        find("the top neuron", r"most active neuron .*? is #(\d+)")
        find("the top neuron", r"neuron #(\d+) at the last position")
        find("the top neuron's activation", rf"is #\d+ \(({NUM})\)")
        if (fig := _figure(figures, "Most active neurons")) is not None:
            drawn["the top neuron"] = float(fig.data[0].x[0][1:])
            drawn["the top neuron's activation"] = _bars(fig)[0]
    elif url == "layernorm":
        if (fig := _figure(figures, "One position through")) is not None:  # its rows' titles print μ and σ²
            said += " " + " ".join(a.text for a in fig.layout.annotations)
        find("μ entering", rf"Entering: mean ({NUM})")
        find("μ entering", rf"μ = {NUM} ÷ \d+ = ({NUM})")
        find("μ entering", rf"\(μ = ({NUM}), σ²")
        find("σ entering", rf"Entering: mean {NUM}, standard deviation ({NUM})")
        find("σ² entering", rf"σ² = ({NUM}) \(")
        find("σ² entering", rf"μ = {NUM}, σ² = ({NUM})\)")
        find("mean after", rf"After centring and scaling: mean ({NUM})")
        find("mean after", rf"After: mean ({NUM})")
        find("σ after", rf"After centring and scaling: mean {NUM}, standard deviation ({NUM})")
        find("σ after", rf"After: mean {NUM} and standard deviation ({NUM})")
        find("scaled[j]", rf"= ({NUM}); then gain")
        find("out[j]", rf"= ({NUM})\. After:")
        j = re.search(r"Coordinate (\d+)", said)
        if (fig := _figure(figures, "One position through")) is not None:
            x, scaled, out = (np.asarray(fig.data[k].y, dtype=np.float64) for k in (0, 2, 3))
            drawn |= {"μ entering": x.mean(), "σ entering": x.std(), "σ² entering": x.var(),
                      "mean after": scaled.mean(), "σ after": scaled.std()}
            if j:
                drawn["scaled[j]"], drawn["out[j]"] = scaled[int(j.group(1))], out[int(j.group(1))]
    elif url == "block":
        find("‖Δattn‖ first", rf"‖Δattn‖ is ({NUM}) at the first position")
        find("‖Δattn‖ last", rf"and ({NUM}) at the last")
        find("‖Δattn‖ last", rf"\+ Δattn, of norm ({NUM})")
        find("‖Δmlp‖ last", rf"\+ Δmlp, of norm ({NUM})")
        find("‖Δmlp‖ least", rf"‖Δmlp‖ ranges from ({NUM}) to")
        find("‖Δmlp‖ most", rf"‖Δmlp‖ ranges from {NUM} to ({NUM})")
        find("‖Δattn‖ / ‖x‖ last", rf"‖Δattn‖ ÷ ‖xₙ‖ = {NUM} ÷ {NUM} = ({NUM})")
        find("‖Δmlp‖ / ‖x′‖ last", rf"‖Δmlp‖ ÷ ‖x′ₙ‖ = {NUM} ÷ {NUM} = ({NUM})")
        find("stream's mean norm first", rf"mean norm [a-z ]+ from ({NUM}) \(")
        find("stream's mean norm last", rf"mean norm [a-z ]+ from {NUM} \([^)]*\) to ({NUM}) \(")
        for starts, key in (("‖Δattn‖ added", "‖Δattn‖"), ("‖Δmlp‖ added", "‖Δmlp‖")):
            if (fig := _figure(figures, starts)) is not None:
                bars = _bars(fig)
                drawn[key + " last"] = bars[-1]
                if key == "‖Δattn‖":
                    drawn[key + " first"] = bars[0]
                else:
                    drawn[key + " least"], drawn[key + " most"] = bars.min(), bars.max()
        for starts, key in (("‖Δattn‖ / ‖xₙ‖", "‖Δattn‖ / ‖x‖ last"), ("‖Δmlp‖ / ‖x′ₙ‖", "‖Δmlp‖ / ‖x′‖ last")):
            if (fig := _figure(figures, starts)) is not None:
                drawn[key] = _bars(fig)[-1]
        if (fig := _figure(figures, "‖residual stream‖")) is not None:
            # a long text's chart draws a mean line in a min-max band
            mean = [t for t in fig.data if (t.name or "").startswith("mean")]
            lines = np.array([np.asarray(t.y, dtype=np.float64) for t in mean or fig.data])  # [lines, points]
            drawn["stream's mean norm first"] = lines[:, 0].mean()
            drawn["stream's mean norm last"] = lines[:, -1].mean()
    else:
        raise ValueError(f"no quantities read for page {url!r}")
    return {q: (printed[q], drawn.get(q)) for q in printed.keys() | drawn.keys()}


def disagree(found: dict[str, tuple[list[str], float | None]]) -> list[str]:
    """What breaks the rule, one line each (empty when every printed number is the chart's and
    printed numbers of one quantity agree)."""
    wrong = []
    for quantity, (numbers, truth) in found.items():
        if truth is not None:
            slack = 1e-6 * abs(truth) + 1e-9  # the chart's float32 against a float64 of the same tensor
            wrong += [f"{quantity}: printed {n}, the chart draws {truth:.6g}" for n in numbers
                      if abs(value(n) - truth) > half_unit(n) + slack]
        for a in numbers:
            for b in numbers:
                if abs(value(a) - value(b)) > half_unit(a) + half_unit(b) + 1e-12:
                    wrong.append(f"{quantity}: printed both {a} and {b}")
    return sorted(set(wrong))

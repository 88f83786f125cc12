"""Printed arithmetic that a reader can redo: the worked examples print each step as an equation of
printed numbers ("27.7123 × 0.5512 × 0.16789 = 2.564"), and whoever recomputes the left side from
the numbers as printed gets the right side to its last printed digit, on every input and every CPU.

That holds by construction: a worked example is printed on a `Sheet`, which rounds the operands and
computes each result from the printed expression itself (`evaluate`, the function the checks use),
so the result is the printed operands' and never a value computed elsewhere (a float32 tensor, another
CPU's rounding). A result used as the next step's operand is used as printed. What precision still
decides is whether each result is also its quantity's own value (the chart's) to the printed digits:
rounding each factor to a few decimals is not enough for that (27.71 × 0.55 × 0.168 is 2.561, where
the product of the unrounded factors is 2.548). `enough` takes the fewest operand decimals at which
every result is its quantity's rounding; where none is (a value within a hair of a rounding tie), the
most decimals, at which the equations hold all the same and each result is within a few units of the
9th decimal of its quantity. `equations` / `holds` read the equations back out of a text.

The notation: numbers as Python prints them (a leading "-" for a negative number), "−" for
subtraction, ×, ÷, +, parentheses, √( ), e^x or e^( ), GELU( ) (the tanh form, GPT-2's) and Φ( ),
the standard normal distribution function (the exact GELU of a is a × Φ(a), nanoGPT's)."""

import math
import re
from collections.abc import Callable

NUMBER = r"-?\d{1,3}(?:,\d{3})+(?:\.\d+)?|-?\d+(?:\.\d+)?"
_RHS = re.compile(rf"=\s*({NUMBER})(?!\d|\s*%)")
# what a printed expression is made of: numbers, operators, parentheses, √, e^ and GELU
_EXPRESSION = re.compile(r"(?:[\d.\s()×÷+−\-√Φ]|e\^|GELU|,(?=\d))*")
_OPERATOR = re.compile(r"[×÷+−√Φ]|e\^|GELU|\d\s*-|\)\s*-")


def fmt(value: float, decimals: int) -> str:
    """value to `decimals` decimals, never a negative zero."""
    return f"{round(value, decimals) + 0.0:.{decimals}f}"


def term(number: str) -> str:
    """A printed number as an operand after an operator: a negative one in parentheses ("− (-0.5)")."""
    return f"({number})" if number.startswith("-") else number


def decimals_of(number: str) -> int:
    return len(number.split(".")[1]) if "." in number else 0


def gelu(a: float) -> float:
    """GPT-2's tanh GELU of one number."""
    return 0.5 * a * (1 + math.tanh(math.sqrt(2 / math.pi) * (a + 0.044715 * a ** 3)))


def phi(a: float) -> float:
    """The standard normal distribution function: P(Z ≤ a)."""
    return 0.5 * (1 + math.erf(a / math.sqrt(2)))


def evaluate(expression: str) -> float:
    """The value of a printed expression (see the module's notation)."""
    python = expression.replace(",", "").replace("−", "-").replace("×", "*").replace("÷", "/")
    python = re.sub(r"e\^\(", "exp(", python)
    python = re.sub(rf"e\^({NUMBER})", r"exp(\1)", python)
    python = python.replace("√(", "sqrt(").replace("GELU(", "gelu(").replace("Φ(", "phi(")
    if not re.fullmatch(r"[\d.\s()*/+\-a-z]*", python) or re.search(r"[a-z]+", python.replace("exp", "")
                                                                          .replace("sqrt", "").replace("gelu", "")
                                                                          .replace("phi", "")):
        raise ValueError(f"not a printed expression: {expression!r}")
    return float(eval(python, {"__builtins__": {}},  # noqa: S307
                      {"exp": math.exp, "sqrt": math.sqrt, "gelu": gelu, "phi": phi}))


def equations(text: str) -> list[tuple[str, str]]:
    """Every "expression = number" the text prints, as (expression, number): the expression is the
    longest stretch of numbers and operators before the "=" with at least one operator in it."""
    plain = text.replace("**", "")
    found = []
    for m in _RHS.finditer(plain):
        before = plain[: m.start()]
        before = before[before.rfind("=") + 1:]
        start = next(i for i in range(len(before) + 1) if _EXPRESSION.fullmatch(before[i:]))
        expression = before[start:].strip()
        while expression and not re.match(r"[\d(√Φ]|e\^|GELU|-\d", expression):  # a stray ")" or operator
            expression = expression[1:].strip()
        if expression and _OPERATOR.search(expression):
            found.append((expression, m.group(1)))
    return found


def holds(expression: str, number: str) -> bool:
    """Whether `expression`, computed from its printed numbers, rounds to `number` at its printed decimals:
    within half a unit of its last digit, give or take the few units in the last place of a binary float
    that the computation and the reading of a decimal number each cost (at a tie, 1.0863449965 printed
    to 9 decimals, either neighbour is within half a unit, and float64 cannot tell which is nearer)."""
    value, printed = evaluate(expression), float(number.replace(",", ""))
    slack = 8 * math.ulp(max(abs(value), abs(printed)))
    return abs(value - printed) <= 0.5 * 10 ** -decimals_of(number) + slack


class Sheet:
    """One printing of a worked example with `n` decimals for its operands. `num` prints an operand;
    `result` prints the value of an expression of printed numbers, computed from those numbers, and
    notes whether it is also its quantity's own value to the printed digits (`misses` counts those
    that are not)."""

    def __init__(self, n: int):
        self.n, self.misses = n, 0

    def num(self, value: float, more: int = 0) -> str:
        """An operand: `value` to n (+ `more`) decimals."""
        return fmt(value, self.n + more)

    @property
    def fewer(self) -> int:
        """One decimal fewer than the operands (3 at least), for a result the operands' rounding, carried
        through its expression, would otherwise reach in its last digit."""
        return max(3, self.n - 1)

    def result(self, expression: str, value: float | None, decimals: int | None = None) -> str:
        """`expression` (printed numbers) computed and printed to `decimals` (default n); `value` the
        quantity it stands for, unrounded (the chart's), or None for a number shown nowhere else (the
        difference of two printed numbers). The printed result is the expression's, whatever `value`."""
        places = self.n if decimals is None else decimals
        printed = fmt(evaluate(expression), places)
        self.misses += value is not None and printed != fmt(value, places)
        return printed

    def equation(self, expression: str, value: float | None, decimals: int | None = None) -> str:
        """"expression = result", the result as `result` prints it."""
        return f"{expression} = {self.result(expression, value, decimals)}"


def enough(prints: Callable[[Sheet], str], least: int = 2, most: int = 9) -> str:
    """prints(Sheet(n)) for the fewest operand decimals n from `least` to `most` at which every
    result is its quantity's value to the printed digits; the most decimals when none is. Every
    equation holds from its printed numbers whichever n it is (Sheet computes each result from them)."""
    for n in range(least, most + 1):
        sheet = Sheet(n)
        text = prints(sheet)
        if not sheet.misses:
            return text
    return text


def pct(x: float) -> str:
    """A share as a percentage: whole percents from 10 % on, two significant digits below (0.2%, not 0%)."""
    return f"{x:.0%}" if abs(x) >= 0.095 else f"{100 * x:.2g}%"


NOT_SENTENCES = (fmt, term, pct,  # a number's digits
                 enough)  # prints a worked example's equation (the sentence is the notices' *_worked)

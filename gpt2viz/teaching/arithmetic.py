"""Printed arithmetic that a reader can redo: the worked examples print each step as an equation of
printed numbers ("27.7123 × 0.5512 × 0.16789 = 2.564"), and whoever recomputes the left side from
the numbers as printed gets the right side to its last printed digit. Rounding each factor to a few
decimals is not enough for that (27.71 × 0.55 × 0.168 is 2.561, not 2.548): `enough` finds how many
decimals the operands need, and `equations` / `holds` read the equations back out of a text.

The notation: numbers as Python prints them (a leading "-" for a negative number), "−" for
subtraction, ×, ÷, +, parentheses, √( ), e^x or e^( ), and GELU( ) (the tanh form, GPT-2's)."""

import math
import re
from collections.abc import Callable

NUMBER = r"-?\d{1,3}(?:,\d{3})+(?:\.\d+)?|-?\d+(?:\.\d+)?"
_RHS = re.compile(rf"=\s*({NUMBER})(?!\d|\s*%)")
# what a printed expression is made of: numbers, operators, parentheses, √, e^ and GELU
_EXPRESSION = re.compile(r"(?:[\d.\s()×÷+−\-√]|e\^|GELU|,(?=\d))*")
_OPERATOR = re.compile(r"[×÷+−√]|e\^|GELU|\d\s*-|\)\s*-")


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


def evaluate(expression: str) -> float:
    """The value of a printed expression (see the module's notation)."""
    python = expression.replace(",", "").replace("−", "-").replace("×", "*").replace("÷", "/")
    python = re.sub(r"e\^\(", "exp(", python)
    python = re.sub(rf"e\^({NUMBER})", r"exp(\1)", python)
    python = python.replace("√(", "sqrt(").replace("GELU(", "gelu(")
    if not re.fullmatch(r"[\d.\s()*/+\-a-z]*", python) or re.search(r"[a-z]+", python.replace("exp", "")
                                                                          .replace("sqrt", "").replace("gelu", "")):
        raise ValueError(f"not a printed expression: {expression!r}")
    return float(eval(python, {"__builtins__": {}}, {"exp": math.exp, "sqrt": math.sqrt, "gelu": gelu}))  # noqa: S307


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
        while expression and not re.match(r"[\d(√]|e\^|GELU|-\d", expression):  # a stray ")" or operator
            expression = expression[1:].strip()
        if expression and _OPERATOR.search(expression):
            found.append((expression, m.group(1)))
    return found


def holds(expression: str, number: str) -> bool:
    """Whether `expression`, computed from its printed numbers, rounds to `number` at its printed decimals."""
    value, places = evaluate(expression), decimals_of(number)
    return abs(value - float(number.replace(",", ""))) <= 0.5 * 10 ** -places * (1 + 1e-9)


def enough(prints: Callable[[int], str], least: int = 2, most: int = 9) -> str:
    """The first of prints(least), ..., prints(most) whose every equation holds (the last if none)."""
    for n in range(least, most + 1):
        text = prints(n)
        if all(holds(e, r) for e, r in equations(text)):
            return text
    return text


NOT_SENTENCES = (fmt, term,  # a number's digits
                 enough)  # prints a worked example's equation (the sentence is the notices' *_worked)

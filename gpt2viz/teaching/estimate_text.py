"""What Compare and patch says of attribution patching beside the exact patching, each sentence computed
from the two grids' agreement (analysis/estimate.py). `SENTENCES` lists them for the corpus test."""

from ..analysis.estimate import MISS, Agreement

WHY = ("A linear estimate misses where the model is far from linear between the two runs: a softmax the patch "
       "saturates or un-saturates (an attention pattern that flips to another key), direct and indirect effects "
       "that cancel, a LayerNorm whose scale the patch moves. Where it misses, only the exact patching says what "
       "the cell does.")


def intro() -> str:
    return ("**Beside it: the linear estimate (attribution patching).** One forward and one backward pass of B give "
            "every cell at once: the metric's gradient at B's activation times (A's activation − B's), over "
            "m_A − m_B. The exact grid above took one run a cell.")


def agreement_sentence(grid: str, a: Agreement, worst: str) -> str:
    """One grid's agreement: `grid` names it ("the residual stream's grid"), `worst` its worst cell."""
    if a.cells == 0:
        return f"On {grid}, no cell has both an exact value and an estimate (m_A = m_B): nothing to compare."
    corr = ("their correlation is not measurable (the cells do not vary)" if a.correlation != a.correlation
            else f"the estimate correlates {a.correlation:.2f} with the exact patching")
    cells = "its one cell" if a.cells == 1 else f"the {a.cells} cells"
    off = (f"it is off by more than {MISS:g} (a tenth of m_A − m_B) in {a.misses} of {a.cells} cells"
           if a.misses else f"it is off by more than {MISS:g} (a tenth of m_A − m_B) in none of {cells}")
    return (f"On {grid}, {corr}; {off}. The largest miss is at {worst}: exact {a.exact:.3g}, estimated "
            f"{a.estimated:.3g}.")


def why() -> str:
    return WHY


SENTENCES = (intro, agreement_sentence, why)

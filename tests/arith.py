"""An independent evaluator for the calculation texts the package shows ("768 × 3,072 + 3,072"):
plain integer arithmetic only, parsed with ast, never eval."""

import ast
import operator

_OPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv}


def evaluate(text: str):
    def ev(node):
        if isinstance(node, ast.Expression):
            return ev(node.body)
        if isinstance(node, ast.Constant) and isinstance(node.value, int):
            return node.value
        if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
            return _OPS[type(node.op)](ev(node.left), ev(node.right))
        raise ValueError(f"not plain arithmetic: {text!r}")
    return ev(ast.parse(text.replace("×", "*").replace("−", "-").replace(",", ""), mode="eval"))

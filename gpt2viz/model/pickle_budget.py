"""A size and depth budget on a pickle, read from its opcodes before one of them runs.

A few hundred bytes of pickle can describe a structure too large to walk: a list memoized once and
fetched twice into the next list, sixty times over, is 2^60 elements to `repr`, to compare or (for
tuples) to hash, though it loads in microseconds. `check_pickle` follows the pickle machine's stack
with a stand-in for each object that carries only its expanded size (the nodes a walk of it visits,
each fetch from the memo counted again) and its depth, and refuses the file as soon as one object
would exceed the budget. A container changed after it was placed in another is refused too: a
pickler finishes each object before its parent takes it, so only a crafted file does that, and it is
the one way a stand-in's size could fall behind its object's.
"""

import pickletools

MARK = object()  # the stand-in for a mark on the stack
IN_PLACE = frozenset({"APPEND", "APPENDS", "SETITEM", "SETITEMS", "ADDITEMS", "BUILD"})
MEMO_PUT = frozenset({"PUT", "BINPUT", "LONG_BINPUT"})
MEMO_GET = frozenset({"GET", "BINGET", "LONG_BINGET"})
LARGEST_INT = 2 ** 64  # a vocabulary's or a checkpoint's integers are ids, sizes and steps


class PickleRefused(ValueError):
    """The pickle breaks the budget or is not one; the message is one line and names no object."""


class _Node:
    __slots__ = ("size", "depth", "placed")

    def __init__(self, size: int, depth: int):
        self.size, self.depth, self.placed = size, depth, False


def check_pickle(data: bytes, *, max_nodes: int, max_depth: int, allowed: frozenset | None = None) -> int:
    """The number of opcodes, after checking every object the pickle builds stays within the budget.

    `allowed` (opcode names): any other opcode is refused by name, before anything is counted.
    """
    stack: list = []
    memo: dict = {}
    count = 0

    def pop():
        if not stack or stack[-1] is MARK:
            raise PickleRefused("its opcodes take more from the stack than they put on it")
        return stack.pop()

    def top():
        if not stack or stack[-1] is MARK:
            raise PickleRefused("its opcodes take more from the stack than they put on it")
        return stack[-1]

    def pop_to_mark() -> list:
        items = []
        while stack and stack[-1] is not MARK:
            items.append(stack.pop())
        if not stack:
            raise PickleRefused("an opcode looks for a mark that is not there")
        stack.pop()
        return items

    def grow(node: _Node, children: list) -> None:
        for c in children:
            c.placed = True
            node.size = min(node.size + c.size, max_nodes + 1)
            node.depth = max(node.depth, c.depth + 1)
        if node.size > max_nodes:
            raise PickleRefused(f"it builds an object of more than {max_nodes:,} elements")
        if node.depth > max_depth:
            raise PickleRefused(f"it nests objects more than {max_depth} deep")

    try:
        for op, arg, _ in pickletools.genops(data):
            count += 1
            name = op.name
            if allowed is not None and name not in allowed:
                what = f" ({str(arg)[:60]})" if name in ("GLOBAL", "INST") and arg else ""
                raise PickleRefused(f"it holds a {name} opcode{what}")
            if isinstance(arg, int) and not isinstance(arg, bool) and abs(arg) > LARGEST_INT \
                    and name not in MEMO_GET | MEMO_PUT:
                raise PickleRefused(f"it holds an integer of {abs(arg).bit_length():,} bits")
            if name == "MARK":
                stack.append(MARK)
            elif name in MEMO_PUT:
                memo[arg] = top()
            elif name == "MEMOIZE":
                memo[len(memo)] = top()
            elif name in MEMO_GET:
                if arg not in memo:
                    raise PickleRefused(f"it fetches memo entry {arg} before storing it")
                stack.append(memo[arg])
            elif name == "DUP":
                top = pop()
                stack.extend((top, top))
            elif name == "POP" and stack and stack[-1] is MARK:
                stack.pop()
            elif name in IN_PLACE:
                children = pop_to_mark() if "mark" in map(str, op.stack_before) else \
                    [pop() for _ in op.stack_before[1:]]
                target = pop()
                if target.placed:
                    raise PickleRefused("it changes a container after placing it in another")
                grow(target, children)
                stack.append(target)
            else:
                before = [str(s) for s in op.stack_before]
                if "mark" in before:
                    children = pop_to_mark() + [pop() for _ in before[:before.index("mark")]]
                else:
                    children = [pop() for _ in before]
                for _ in op.stack_after:
                    node = _Node(1, 0)
                    grow(node, children)
                    stack.append(node)
            if name == "STOP":
                break
    except PickleRefused:
        raise
    except Exception as e:  # genops on bytes that are not a pickle, or a truncated one
        first = str(e).splitlines()[0][:120] if str(e) else type(e).__name__
        raise PickleRefused(f"it is not a pickle: {first}") from None
    return count

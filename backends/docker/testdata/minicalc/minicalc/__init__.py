"""A tiny calculator with a parser, enough for a real test suite."""

import operator

_OPS = {"+": operator.add, "-": operator.sub, "*": operator.mul, "/": operator.truediv}


def tokenize(text):
    """Split an infix expression into numbers and operators."""
    tokens, num = [], ""
    for ch in text.replace(" ", ""):
        if ch.isdigit() or ch == ".":
            num += ch
            continue
        if num:
            tokens.append(float(num))
            num = ""
        if ch not in _OPS and ch not in "()":
            raise ValueError(f"unexpected character {ch!r}")
        tokens.append(ch)
    if num:
        tokens.append(float(num))
    return tokens


def evaluate(text):
    """Evaluate an infix expression with the usual precedence."""
    tokens = tokenize(text)
    pos = 0

    def expr():
        nonlocal pos
        value = term()
        while pos < len(tokens) and tokens[pos] in ("+", "-"):
            op = tokens[pos]
            pos += 1
            value = _OPS[op](value, term())
        return value

    def term():
        nonlocal pos
        value = factor()
        while pos < len(tokens) and tokens[pos] in ("*", "/"):
            op = tokens[pos]
            pos += 1
            value = _OPS[op](value, factor())
        return value

    def factor():
        nonlocal pos
        tok = tokens[pos]
        pos += 1
        if tok == "(":
            value = expr()
            pos += 1  # ")"
            return value
        if tok == "-":
            return -factor()
        return tok

    return expr()

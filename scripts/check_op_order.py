"""Fails when a call builds two or more ops in its arguments.

C++ leaves the evaluation order of function arguments unspecified, so
`add(b, loc, scalar(...), mul(...))` emits its two operand ops in one order
with gcc and in the other with clang: the IR, and so artifacts and FileCheck
tests, would depend on the compiler. Name the intermediates instead, one op
per statement. A heuristic over the text: an argument "builds an op" when it
contains a `::create(` call, a `(b, loc, ...)`-style helper call or a
scalar/splat constant helper; lambdas are not counted.

Usage: check_op_order.py FILE...   (exit 1 and one line per finding)
"""

import re
import sys

BUILDS = re.compile(r"::create\s*\(|\(\s*(?:b|n\.b|builder|rewriter|tb)\s*,\s*"
                    r"(?:loc|l|n\.loc|tl)\b|\bscalar\w*\s*\(|\bsplat\s*\(|\bc\s*\(")
CALL = re.compile(r"\b\w+(?:::\w+)*\s*\(")


def arguments(text, open_paren):
    """The top-level arguments of the call whose '(' is at open_paren."""
    depth, args, current = 0, [], []
    for ch in text[open_paren:]:
        if ch in "([{":
            depth += 1
            if depth == 1:
                continue
        elif ch in ")]}":
            depth -= 1
            if depth == 0:
                args.append("".join(current))
                return args
        elif ch == "," and depth == 1:
            args.append("".join(current))
            current = []
            continue
        current.append(ch)
    return args


def main():
    findings = 0
    for path in sys.argv[1:]:
        text = open(path, encoding="utf-8").read()
        # Comments and strings do not build anything.
        code = re.sub(r"//[^\n]*|\"(?:\\.|[^\"\\])*\"",
                      lambda m: " " * len(m.group(0)), text)
        for call in CALL.finditer(code):
            args = arguments(code, call.end() - 1)
            building = [a for a in args if BUILDS.search(a) and "[&]" not in a
                        and "[=]" not in a]
            if len(building) >= 2:
                line = code.count("\n", 0, call.start()) + 1
                snippet = text[call.start():].splitlines()[0].strip()
                print(f"{path}:{line}: two op-building arguments in one call "
                      f"(unspecified order): {snippet}")
                findings += 1
    sys.exit(1 if findings else 0)


if __name__ == "__main__":
    main()

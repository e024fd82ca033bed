#!/usr/bin/env python3
"""Checks the graph pipeline's output over a folder of ONNX models.

    check_graph_invariants.py KILNC DIR [DIR...]

For every DIR/*/model.onnx, runs `KILNC model --emit=graph` and checks that
the printed function has
  * no dead op (a result nothing reads),
  * no duplicate op (same op name, operands and attributes/types),
  * no non-constant op whose operands are all kiln.constant, except ops the
    constant evaluator does not model by design (matmul, conv, pool).
Models kilnc rejects are counted as unsupported, not failed. Prints one FAIL
line per violation and a summary; exits 1 on any violation.
"""
import os
import re
import subprocess
import sys

# Ops kiln-fold-constants leaves to run time on purpose (see Passes.td).
NOT_EVALUATED = {"kiln.matmul", "kiln.conv", "kiln.pool"}

OP_LINE = re.compile(r'^\s*(%[\w]+)\s*=\s*"?(kiln\.\w+)"?\s*(.*)$')
SSA = re.compile(r'%[\w]+')


def check(kilnc, model):
    proc = subprocess.run([kilnc, model, "--emit=graph"], capture_output=True,
                          text=True)
    if proc.returncode != 0:
        return None
    text = proc.stdout.split("{-#")[0]  # drop the resource blobs
    ops = []  # (result, name, operands, rest-without-ssa)
    uses = {}
    for line in text.splitlines():
        for name in SSA.findall(line.split(" = ", 1)[-1] if OP_LINE.match(line) else line):
            uses[name] = uses.get(name, 0) + 1
        m = OP_LINE.match(line)
        if not m:
            continue
        result, name, rest = m.groups()
        ops.append((result, name, tuple(SSA.findall(rest)), SSA.sub("%", rest)))
    errors = []
    constants = {r for r, n, _, _ in ops if n == "kiln.constant"}
    seen = {}
    for result, name, operands, rest in ops:
        if uses.get(result, 0) == 0:
            errors.append(f"dead {name} {result}")
        key = (name, operands, rest)
        if key in seen:
            errors.append(f"duplicate {name} {result} of {seen[key]}")
        seen.setdefault(key, result)
        if (name != "kiln.constant" and name not in NOT_EVALUATED and operands
                and all(o in constants for o in operands)):
            errors.append(f"unfolded {name} {result}")
    return errors


def main():
    kilnc, dirs = sys.argv[1], sys.argv[2:]
    checked = unsupported = failed = 0
    for d in dirs:
        for case in sorted(os.listdir(d)):
            model = os.path.join(d, case, "model.onnx")
            if not os.path.isfile(model):
                continue
            errors = check(kilnc, model)
            if errors is None:
                unsupported += 1
                continue
            checked += 1
            if errors:
                failed += 1
                for e in errors:
                    print(f"FAIL {os.path.basename(d)}/{case}: {e}")
    print(f"checked {checked} models, {failed} failed, {unsupported} unsupported")
    return 1 if failed or checked == 0 else 0


if __name__ == "__main__":
    sys.exit(main())

"""What driver.py reads and answers, from its source (ast), for
TestDriverProtocol: its PROTOCOL, the messages handle() takes, the keys it
reads from a request, and the keys of each answer it returns (hello, an
open arm, a batch, the timed repetitions and their switch counts). Prints
one JSON object."""
import ast
import json
import sys

tree = ast.parse(open(sys.argv[1]).read(), sys.argv[1])
out = {"protocol": None, "do": [], "reads": [], "answers": {}}


def returned_dicts(fn):
    for node in ast.walk(fn):
        if isinstance(node, ast.Return) and isinstance(node.value, ast.Dict):
            yield node.value


def keys(d):
    return [k.value for k in d.keys if isinstance(k, ast.Constant)]


for node in ast.walk(tree):
    if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "PROTOCOL" for t in node.targets):
        out["protocol"] = ast.literal_eval(node.value)
    elif isinstance(node, ast.FunctionDef) and node.name == "handle":
        for c in ast.walk(node):
            if (isinstance(c, ast.Compare) and isinstance(c.left, ast.Name) and c.left.id == "do"
                    and isinstance(c.comparators[0], ast.Constant)):
                out["do"].append(c.comparators[0].value)
    elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get" \
            and isinstance(node.func.value, ast.Name) and node.func.value.id == "req" and node.args \
            and isinstance(node.args[0], ast.Constant):
        out["reads"].append(node.args[0].value)
    elif isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and node.value.id == "req" \
            and isinstance(node.slice, ast.Constant):
        out["reads"].append(node.slice.value)
    if isinstance(node, ast.FunctionDef) and node.name in ("hello", "opened", "batch", "timed"):
        for d in returned_dicts(node):
            out["answers"].setdefault(node.name, []).extend(keys(d))
            for k, v in zip(d.keys, d.values):  # the switch counts
                if isinstance(v, ast.Dict):
                    out["answers"].setdefault("counts", []).extend(keys(v))
                elif isinstance(v, ast.IfExp) and isinstance(v.body, ast.Dict):
                    out["answers"].setdefault("counts", []).extend(keys(v.body))
print(json.dumps(out))

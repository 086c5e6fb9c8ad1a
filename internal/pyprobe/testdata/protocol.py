"""What probe.py and sitecustomize.py send to ctxlab, read from their
source with ast (TestProbeProtocol): the protocol version, the event types'
values, each event record's length and type, and each JSON object's kind
and fields. Prints one JSON object."""
import ast
import json
import re
import sys

out = {"protocol": None, "events": {}, "records": [], "kinds": {}}


def kind_keys(kind, keys):
    out["kinds"].setdefault(kind, [])
    out["kinds"][kind] = sorted(set(out["kinds"][kind]) | set(keys))


for path in sys.argv[1:]:
    tree = ast.parse(open(path).read(), path)
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            t, v = node.targets[0], node.value
            if isinstance(t, ast.Name) and t.id == "PROTOCOL":
                out["protocol"] = ast.literal_eval(v)
            if isinstance(t, ast.Tuple) and isinstance(v, ast.Tuple):
                for n, c in zip(t.elts, v.elts):
                    if isinstance(n, ast.Name) and n.id.startswith("T_"):
                        out["events"][n.id] = ast.literal_eval(c)
        elif isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Tuple):
            elts = node.args[0].elts
            if elts and isinstance(elts[0], ast.Name) and elts[0].id.startswith("T_"):
                out["records"].append([elts[0].id, len(elts), node.lineno])
        elif isinstance(node, ast.Dict):
            keys = [k.value for k in node.keys if isinstance(k, ast.Constant)]
            if "kind" in keys:
                kv = node.values[keys.index("kind")]
                if isinstance(kv, ast.Constant):
                    kind_keys(kv.value, [k for k in keys if k != "kind"])
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.startswith('{"kind":'):
            # a JSON object written out by hand (hello; the loader's status):
            # its kind, or %s where the loader fills it in
            s = node.value
            m = re.match(r'\{"kind":"([^"]*)"', s)
            keys = [k for k in re.findall(r'"(\w+)":', s) if k != "kind"]
            for kind in ([m.group(1)] if m.group(1) != "%s" else re.findall(r'_ctxlab_say\(os, "(\w+)"', open(path).read())):
                kind_keys(kind, keys)
print(json.dumps(out))

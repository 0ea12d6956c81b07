#!/usr/bin/env python3
"""Writes the inputs of internal/engine/testdata/update/<case>/ (origin,
updated, local, and optional strategy/error files). The expected/ folders
are golden files written by `go test ./internal/engine -run TestUpdate -update`
and reviewed by hand."""
import os, shutil, sys

ROOT = os.path.join(os.path.dirname(__file__), "..", "internal", "engine", "testdata", "update")

KPTFILE = """apiVersion: kpt.dev/v1
kind: Kptfile
metadata:
  name: {name}
info:
  description: {desc}
"""
LOCAL_KPTFILE = """apiVersion: kpt.dev/v1
kind: Kptfile
metadata:
  name: tenant-a
upstream:
  type: git
  git:
    repo: file:///catalog.git
    directory: app
    ref: app/v1
  updateStrategy: resource-merge
upstreamLock:
  type: git
  git:
    repo: file:///catalog.git
    directory: app
    ref: app/v1
    commit: 1111111111111111111111111111111111111111
info:
  description: {desc}
"""

def deploy(replicas=1, image="nginx:1.25", name="app", ns=None, comment=False, extra="", containers=None, ident=None):
    # comment: write the kpt-merge identity comment a clone leaves; ident is
    # the (namespace, name) it records, the upstream identity.
    ins, iname = ident or (ns or "", name)
    md = "metadata: # kpt-merge: {}/{}\n".format(ins, iname) if comment else "metadata:\n"
    md += "  name: {}\n".format(name)
    if ns:
        md += "  namespace: {}\n".format(ns)
    if containers is None:
        containers = "      - name: app\n        image: {}\n".format(image)
    return ("apiVersion: apps/v1\nkind: Deployment\n" + md +
            "spec:\n  replicas: {}\n{}  template:\n    spec:\n      containers:\n{}".format(replicas, extra, containers))

def cm(name, data, comment=False, ns=None):
    md = "metadata: # kpt-merge: {}/{}\n".format(ns or "", name) if comment else "metadata:\n"
    md += "  name: {}\n".format(name)
    if ns:
        md += "  namespace: {}\n".format(ns)
    body = "".join("  {}: {}\n".format(k, v) for k, v in data.items())
    return "apiVersion: v1\nkind: ConfigMap\n" + md + "data:\n" + body

def base(desc="the app", **kw):
    return {"Kptfile": KPTFILE.format(name="app", desc=desc), "deployment.yaml": deploy(**kw)}

def local(desc="the app", **kw):
    kw.setdefault("comment", True)
    return {"Kptfile": LOCAL_KPTFILE.format(desc=desc), "deployment.yaml": deploy(**kw)}

CTX = """apiVersion: v1
kind: ConfigMap
metadata: # kpt-merge: /kptfile.kpt.dev
  name: kptfile.kpt.dev
  annotations:
    config.kubernetes.io/local-config: "true"
data:
  name: tenant-a
  region: useast1
"""

cases = {}
def case(name, origin, updated, local_, strategy=None, error=None):
    cases[name] = dict(origin=origin, updated=updated, local=local_, strategy=strategy, error=error)

case("noop", base(), base(), local())
case("upstream-field-change", base(), base(replicas=3), local())
case("local-field-change-kept", base(), base(replicas=3), local(image="registry.local/nginx:1.25"))
case("conflict-upstream-wins", base(), base(replicas=3), local(replicas=5))
case("added-upstream", base(), dict(base(), **{"service.yaml": "apiVersion: v1\nkind: Service\nmetadata:\n  name: app\nspec:\n  ports:\n  - port: 80\n"}), local())
case("deleted-upstream-unchanged-locally",
     dict(base(), **{"cm.yaml": cm("settings", {"a": "1"})}), base(),
     dict(local(), **{"cm.yaml": cm("settings", {"a": "1"}, comment=True)}))
case("deleted-upstream-edited-locally",
     dict(base(), **{"cm.yaml": cm("settings", {"a": "1"})}), base(),
     dict(local(), **{"cm.yaml": cm("settings", {"a": "2"}, comment=True)}))
case("added-locally", base(), base(replicas=2), dict(local(), **{"extra.yaml": cm("mine", {"x": "y"})}))
case("deleted-locally",
     dict(base(), **{"cm.yaml": cm("settings", {"a": "1"})}),
     dict(base(replicas=2), **{"cm.yaml": cm("settings", {"a": "9"})}),
     local())
case("added-both-same", base(), dict(base(), **{"cm.yaml": cm("shared", {"k": "v"})}), dict(local(), **{"cm.yaml": cm("shared", {"k": "v"})}))
case("added-both-different", base(), dict(base(), **{"cm.yaml": cm("shared", {"k": "upstream"})}), dict(local(), **{"cm.yaml": cm("shared", {"k": "local"})}),
     error="resource ConfigMap shared was added both upstream and locally with different content")
case("renamed-locally-kpt-merge", base(), base(replicas=4), local(name="tenant-a-app", ns="tenant-a", ident=("", "app")))
case("associative-containers",
     base(containers="      - name: app\n        image: app:1\n      - name: proxy\n        image: proxy:1\n"),
     base(containers="      - name: app\n        image: app:2\n      - name: proxy\n        image: proxy:1\n      - name: metrics\n        image: metrics:1\n"),
     local(containers="      - name: app\n        image: app:1\n        env:\n        - name: MODE\n          value: local\n      - name: proxy\n        image: proxy:1\n      - name: debug\n        image: debug:1\n"))
case("ports-by-container-port",
     base(containers="      - name: app\n        image: app:1\n        ports:\n        - containerPort: 80\n        - containerPort: 9090\n"),
     base(containers="      - name: app\n        image: app:1\n        ports:\n        - containerPort: 80\n          protocol: TCP\n"),
     local(containers="      - name: app\n        image: app:1\n        ports:\n        - containerPort: 80\n          name: http\n        - containerPort: 9090\n        - containerPort: 8443\n"))
case("null-deletes-field",
     base(extra="  paused: true\n"), base(extra="  paused: null\n"), local(extra="  paused: false\n"))
case("comments-preserved", base(), base(replicas=2),
     {"Kptfile": LOCAL_KPTFILE.format(desc="the app"),
      "deployment.yaml": "# Owned by team A.\n" + deploy(comment=True).replace("  replicas: 1\n", "  replicas: 1 # scaled by HPA\n").replace("        image: nginx:1.25\n", "        image: nginx:1.25 # pinned\n")})
case("nonkrm-edited-locally-kept", dict(base(), **{"README.md": "# App\n"}), dict(base(), **{"README.md": "# App v2\n"}), dict(local(), **{"README.md": "# Tenant A app\n"}))
case("nonkrm-follows-upstream", dict(base(), **{"README.md": "# App\n", "notes.txt": "old\n"}), dict(base(), **{"README.md": "# App v2\n", "new.txt": "new\n"}), dict(local(), **{"README.md": "# App\n", "notes.txt": "old\n"}))
case("yaml-not-krm-follows-upstream", dict(base(), **{"values.yaml": "replicas: 1\n"}), dict(base(), **{"values.yaml": "replicas: 2\n"}), dict(local(), **{"values.yaml": "replicas: 1\n"}))

PIPE_O = KPTFILE.format(name="app", desc="the app") + "pipeline:\n  mutators:\n  - image: set-labels\n    name: labels\n    configMap:\n      app: demo\n"
PIPE_U = KPTFILE.format(name="app", desc="the app") + "pipeline:\n  mutators:\n  - image: set-labels\n    name: labels\n    configMap:\n      app: demo\n      tier: web\n  - image: set-annotations\n    name: annotations\n    configMap:\n      owner: platform\n"
PIPE_L = LOCAL_KPTFILE.format(desc="the app") + "pipeline:\n  mutators:\n  - image: set-namespace\n    name: PackageVariant.pv.ns.0\n    configMap:\n      namespace: tenant-a\n  - image: set-labels\n    name: labels\n    configMap:\n      app: demo\n"
case("kptfile-pipeline-merge", {"Kptfile": PIPE_O, "deployment.yaml": deploy()}, {"Kptfile": PIPE_U, "deployment.yaml": deploy()}, {"Kptfile": PIPE_L, "deployment.yaml": deploy(comment=True)})

GATE_O = KPTFILE.format(name="app", desc="the app").replace("info:\n  description: the app\n", "info:\n  description: the app\n  readinessGates:\n  - conditionType: app.example.com/reviewed\n")
GATE_U = GATE_O.replace("  - conditionType: app.example.com/reviewed\n", "  - conditionType: app.example.com/reviewed\n  - conditionType: app.example.com/scanned\n")
GATE_L = LOCAL_KPTFILE.format(desc="the app").replace("info:\n  description: the app\n", "info:\n  description: the app\n  readinessGates:\n  - conditionType: app.example.com/reviewed\n  - conditionType: config.injection.Endpoints.ep\n") + "status:\n  conditions:\n  - type: config.injection.Endpoints.ep\n    status: \"True\"\n"
case("kptfile-readiness-gates", {"Kptfile": GATE_O, "deployment.yaml": deploy()}, {"Kptfile": GATE_U, "deployment.yaml": deploy()}, {"Kptfile": GATE_L, "deployment.yaml": deploy(comment=True)})
case("kptfile-info-merge", base(desc="the app"), base(desc="the app, now with metrics"),
     {"Kptfile": LOCAL_KPTFILE.format(desc="the app").replace("info:\n", "info:\n  keywords:\n  - tenant\n"), "deployment.yaml": deploy(comment=True)})

SUB_K = KPTFILE.format(name="db", desc="the database")
SUB_LK = SUB_K
case("subpackages",
     dict(base(), **{"db/Kptfile": SUB_K, "db/deployment.yaml": deploy(name="app", image="postgres:15")}),
     dict(base(), **{"db/Kptfile": SUB_K, "db/deployment.yaml": deploy(name="app", image="postgres:16")}),
     dict(local(), **{"db/Kptfile": SUB_LK, "db/deployment.yaml": deploy(name="app", image="postgres:15", replicas=2, comment=True)}))
case("multi-doc-file",
     {"Kptfile": KPTFILE.format(name="app", desc="the app"), "all.yaml": deploy() + "---\n" + cm("settings", {"a": "1"})},
     {"Kptfile": KPTFILE.format(name="app", desc="the app"), "all.yaml": deploy() + "---\n" + cm("settings", {"a": "1", "b": "2"}) + "---\n" + cm("more", {"c": "3"})},
     {"Kptfile": LOCAL_KPTFILE.format(desc="the app"), "all.yaml": deploy(comment=True, replicas=3) + "---\n" + cm("settings", {"a": "1"}, comment=True)})
case("package-context-kept", base(), base(replicas=2), dict(local(), **{"package-context.yaml": CTX}))
case("fast-forward", base(), base(replicas=2, image="nginx:1.27"), dict(local(), **{"package-context.yaml": CTX}), strategy="fast-forward")
case("fast-forward-refused", base(), base(replicas=2), local(image="mine:1"), strategy="fast-forward",
     error="the local package has changes of its own, which fast-forward does not merge: apps/Deployment app")
case("force-delete-replace", base(), base(replicas=2),
     dict(local(image="mine:1"), **{"package-context.yaml": CTX, "extra.yaml": cm("mine", {"x": "y"}), "NOTES.md": "mine\n"}), strategy="force-delete-replace")
case("copy-merge", dict(base(), **{"README.md": "# App\n"}), dict(base(replicas=2), **{"README.md": "# App v2\n"}),
     dict(local(image="mine:1"), **{"extra.yaml": cm("mine", {"x": "y"}), "README.md": "# Mine\n", "NOTES.md": "mine\n"}), strategy="copy-merge")
case("strategy-from-kptfile", base(), base(replicas=2), {"Kptfile": LOCAL_KPTFILE.format(desc="the app").replace("updateStrategy: resource-merge", "updateStrategy: fast-forward"), "deployment.yaml": deploy(comment=True, image="mine:1")},
     error="update (fast-forward): the local package has changes of its own")

def write(dir_, files):
    for name, data in files.items():
        p = os.path.join(dir_, name)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, "w") as f:
            f.write(data)

for name, c in cases.items():
    d = os.path.join(ROOT, name)
    for sub in ("origin", "updated", "local"):
        shutil.rmtree(os.path.join(d, sub), ignore_errors=True)
        write(os.path.join(d, sub), c[sub])
    for extra in ("strategy", "error"):
        p = os.path.join(d, extra)
        if c[extra]:
            with open(p, "w") as f:
                f.write(c[extra] + "\n")
        elif os.path.exists(p):
            os.remove(p)
print(len(cases), "cases")

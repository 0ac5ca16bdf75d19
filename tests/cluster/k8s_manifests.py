"""Reads deploy/kubernetes/ as a cluster would: renders the kustomization,
checks every object against the Kubernetes API schema, and works out what
each pod of the job would run (command, arguments, environment, volumes).

Used by kubernetes_test.py. The API schema is the one generated into the
Kubernetes Python client's models (Debian's python3-kubernetes): every
field of every object must be one the API defines, with the type it
defines, and the fields it requires must be there.
"""

import base64
import os
import re
import shutil
import subprocess
import sys

import yaml


class ManifestError(Exception):
    """A manifest that a cluster would refuse, or that this job cannot run."""


# The tests' verdicts: Failure (exit 1) and skip (exit 77, with the reason).
SKIP = 77


class Failure(Exception):
    pass


def fail(msg):
    raise Failure(msg)


def skip(reason):
    print(f"SKIPPED: {reason}")
    sys.exit(SKIP)


def by_kind(objects, kind):
    return [o for o in objects if o["kind"] == kind]


def find_job(objects, component):
    """The Job whose app.kubernetes.io/component is `component`."""
    for o in by_kind(objects, "Job"):
        if o["metadata"]["labels"].get("app.kubernetes.io/component") == (
                component):
            return o
    fail(f"no Job with app.kubernetes.io/component={component}")


# ---------------------------------------------------------------------------
# Rendering: the subset of kustomize that deploy/kubernetes uses.

_KUSTOMIZATION_FIELDS = {
    "apiVersion", "kind", "resources", "configMapGenerator",
    "generatorOptions", "images", "patches",
}


def _load_all(path):
    with open(path, encoding="utf-8") as f:
        return [d for d in yaml.safe_load_all(f) if d is not None]


def render(directory):
    """The objects `kubectl kustomize DIRECTORY` gives, rendered here.

    Supports resources (files or directories holding a kustomization),
    configMapGenerator with files, generatorOptions.disableNameSuffixHash,
    images (newName/newTag) and patches (JSON 6902, with a target).
    Anything else is an error, so the manifests cannot use a feature this
    renderer silently ignores.
    """
    k = _load_all(os.path.join(directory, "kustomization.yaml"))[0]
    unknown = set(k) - _KUSTOMIZATION_FIELDS
    if unknown:
        raise ManifestError(f"{directory}/kustomization.yaml: fields this "
                            f"test does not render: {sorted(unknown)}")
    objects = []
    for r in k.get("resources", []):
        path = os.path.join(directory, r)
        if os.path.isdir(path):
            objects.extend(render(path))
        else:
            objects.extend(_load_all(path))
    options = k.get("generatorOptions", {})
    if set(options) - {"disableNameSuffixHash"} or not options.get(
            "disableNameSuffixHash"):
        if k.get("configMapGenerator"):
            raise ManifestError("configMapGenerator needs generatorOptions "
                                "{disableNameSuffixHash: true} here")
    for gen in k.get("configMapGenerator", []):
        if set(gen) - {"name", "files"}:
            raise ManifestError(f"configMapGenerator {gen.get('name')}: only "
                                "name and files are rendered")
        data = {}
        for f in gen["files"]:
            with open(os.path.join(directory, f), encoding="utf-8") as fh:
                data[os.path.basename(f)] = fh.read()
        objects.append({"apiVersion": "v1", "kind": "ConfigMap",
                        "metadata": {"name": gen["name"]}, "data": data})
    for patch in k.get("patches", []):
        _apply_patch(directory, patch, objects)
    for image in k.get("images", []):
        for obj in objects:
            for c in _containers(obj):
                name, _, _ = c["image"].partition(":")
                if name == image["name"]:
                    new = image.get("newName", name)
                    tag = image.get("newTag")
                    c["image"] = f"{new}:{tag}" if tag else new
    return objects


def _apply_patch(directory, patch, objects):
    target = patch.get("target", {})
    ops = yaml.safe_load(patch["patch"]) if "patch" in patch else _load_all(
        os.path.join(directory, patch["path"]))[0]
    if not isinstance(ops, list):
        raise ManifestError("only JSON 6902 patches (a list of ops) are "
                            "rendered here")
    hits = [o for o in objects
            if o["kind"] == target.get("kind")
            and o["metadata"]["name"] == target.get("name")]
    if len(hits) != 1:
        raise ManifestError(f"patch target {target} matches {len(hits)} "
                            "objects")
    for op in ops:
        parts = [p.replace("~1", "/").replace("~0", "~")
                 for p in op["path"].split("/")[1:]]
        node = hits[0]
        for p in parts[:-1]:
            node = node[int(p)] if isinstance(node, list) else node[p]
        last = parts[-1]
        if op["op"] == "test":
            have = node[int(last)] if isinstance(node, list) else node[last]
            if have != op["value"]:
                raise ManifestError(f"patch test {op['path']}: {have!r} is "
                                    f"not {op['value']!r}")
        elif op["op"] in ("add", "replace"):
            if isinstance(node, list):
                if last == "-":
                    node.append(op["value"])
                elif op["op"] == "add":
                    node.insert(int(last), op["value"])
                else:
                    node[int(last)] = op["value"]
            else:
                if op["op"] == "replace" and last not in node:
                    raise ManifestError(f"patch replace {op['path']}: no "
                                        "such field")
                node[last] = op["value"]
        else:
            raise ManifestError(f"patch op {op['op']} is not rendered here")


def kubectl_render(directory):
    """kubectl kustomize's rendering, or None when kubectl is absent."""
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        return None
    run = subprocess.run([kubectl, "kustomize", directory],
                         capture_output=True, text=True, timeout=60)
    if run.returncode != 0:
        raise ManifestError(f"kubectl kustomize {directory}: {run.stderr}")
    out = run.stdout
    return [d for d in yaml.safe_load_all(out) if d is not None]


def _pod_spec(obj):
    if obj["kind"] in ("Job", "StatefulSet", "Deployment"):
        return obj["spec"]["template"]["spec"]
    if obj["kind"] == "Pod":
        return obj["spec"]
    return None


def _containers(obj):
    spec = _pod_spec(obj)
    if spec is None:
        return []
    return spec.get("initContainers", []) + spec.get("containers", [])


# ---------------------------------------------------------------------------
# Schema: the Kubernetes API's, from the client's generated models.

def _model(name):
    import kubernetes.client as client  # python3-kubernetes
    return getattr(client, name, None)


def check_schema(obj):
    """Raises ManifestError naming the first field the API would refuse."""
    api_version, kind = obj.get("apiVersion"), obj.get("kind")
    if not api_version or not kind:
        raise ManifestError("an object without apiVersion or kind")
    version = api_version.split("/")[-1]
    cls = _model(version[0].upper() + version[1:] + kind)
    if cls is None:
        raise ManifestError(f"{kind} {api_version}: not a kind of the "
                            "Kubernetes API")
    _check(obj, cls.__name__, f"{kind}/{obj.get('metadata', {}).get('name')}")


_PRIMITIVES = {
    "str": (str,), "int": (int,), "float": (int, float), "bool": (bool,),
    "object": (object,), "datetime": (str,), "date": (str,),
}


def _check(value, type_name, where):
    if type_name in _PRIMITIVES:
        ok = isinstance(value, _PRIMITIVES[type_name])
        if type_name in ("int", "float") and isinstance(value, bool):
            ok = False
        if not ok:
            raise ManifestError(f"{where}: {value!r} is not a {type_name}")
        return
    m = re.fullmatch(r"list\[(.+)\]", type_name)
    if m:
        if not isinstance(value, list):
            raise ManifestError(f"{where}: expected a list")
        for i, v in enumerate(value):
            _check(v, m.group(1), f"{where}[{i}]")
        return
    m = re.fullmatch(r"dict\(str, (.+)\)", type_name)
    if m:
        if not isinstance(value, dict):
            raise ManifestError(f"{where}: expected a map")
        for k, v in value.items():
            _check(k, "str", f"{where}.{k}")
            _check(v, m.group(1), f"{where}.{k}")
        return
    cls = _model(type_name)
    if cls is None:
        raise ManifestError(f"{where}: unknown schema type {type_name}")
    if not isinstance(value, dict):
        raise ManifestError(f"{where}: expected an object ({type_name})")
    by_json = {j: p for p, j in cls.attribute_map.items()}
    kwargs = {}
    for key, v in value.items():
        if key not in by_json:
            raise ManifestError(f"{where}: {type_name} has no field '{key}'")
        _check(v, cls.openapi_types[by_json[key]], f"{where}.{key}")
        kwargs[by_json[key]] = v
    try:
        cls(**kwargs)  # the setters refuse missing required fields, enums
    except ValueError as e:
        raise ManifestError(f"{where}: {e}") from None


# ---------------------------------------------------------------------------
# Pods: what a cluster would start for each Job.

class Pod:
    """One pod of a Job, as the Job controller would create it."""

    def __init__(self, job, index):
        self.job = job
        self.index = index
        template = job["spec"]["template"]
        self.spec = template["spec"]
        self.labels = dict(template["metadata"].get("labels", {}))
        self.annotations = dict(template["metadata"].get("annotations", {}))
        name = job["metadata"]["name"]
        self.hostname = f"{name}-{index}"
        self.name = self.hostname  # plus a random suffix in a cluster
        if job["spec"].get("completionMode") == "Indexed":
            self.annotations["batch.kubernetes.io/job-completion-index"] = (
                str(index))
            self.labels["batch.kubernetes.io/job-completion-index"] = (
                str(index))
        self.ip = None  # assigned by the caller

    def dns_names(self, namespace):
        sub = self.spec.get("subdomain")
        if not sub:
            return []
        return [f"{self.hostname}.{sub}",
                f"{self.hostname}.{sub}.{namespace}.svc.cluster.local"]

    def field(self, path, namespace):
        """The value of a downward API fieldRef."""
        m = re.fullmatch(r"metadata\.(labels|annotations)\['(.+)'\]", path)
        if m:
            d = self.labels if m.group(1) == "labels" else self.annotations
            if m.group(2) not in d:
                raise ManifestError(f"{self.name}: fieldRef {path}: no such "
                                    f"{m.group(1)[:-1]} on the pod")
            return d[m.group(2)]
        fields = {"metadata.name": self.name, "metadata.namespace": namespace,
                  "status.podIP": self.ip, "status.podIPs": self.ip,
                  "spec.serviceAccountName": "default"}
        if path not in fields:
            raise ManifestError(f"{self.name}: fieldRef {path} is not "
                                "resolved by this test")
        return fields[path]


def job_pods(objects):
    """Every pod of every Job, in the order the objects list the Jobs."""
    pods = []
    for obj in objects:
        if obj["kind"] != "Job":
            continue
        n = obj["spec"].get("completions", 1)
        if obj["spec"].get("parallelism", 1) != n:
            raise ManifestError(f"Job {obj['metadata']['name']}: parallelism "
                                "must equal completions (every node of a "
                                "Petrel job runs at once)")
        pods.extend(Pod(obj, i) for i in range(n))
    return pods


_VAR = re.compile(r"\$\$|\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)")


def expand(text, env):
    """Kubernetes' $(VAR) expansion: a defined VAR is replaced, an undefined
    one is left as written, and $$ is a literal $."""
    def sub(m):
        if m.group(0) == "$$":
            return "$"
        return env.get(m.group(1), m.group(0))
    return _VAR.sub(sub, text)


def container_env(pod, container, objects, namespace):
    """The environment the kubelet gives `container` of `pod` (without the
    image's own variables such as PATH)."""
    env = {"HOSTNAME": pod.hostname}
    if pod.job["spec"].get("completionMode") == "Indexed":
        env["JOB_COMPLETION_INDEX"] = str(pod.index)
    by_kind = {(o["kind"], o["metadata"]["name"]): o for o in objects}
    for e in container.get("env", []):
        if "value" in e:
            env[e["name"]] = expand(e["value"], env)
            continue
        source = e.get("valueFrom", {})
        if "fieldRef" in source:
            env[e["name"]] = pod.field(source["fieldRef"]["fieldPath"],
                                       namespace)
        elif "secretKeyRef" in source or "configMapKeyRef" in source:
            kind = "Secret" if "secretKeyRef" in source else "ConfigMap"
            ref = source.get("secretKeyRef") or source.get("configMapKeyRef")
            obj = by_kind.get((kind, ref["name"]))
            data = dict((obj or {}).get("data", {}))
            if kind == "Secret":
                data = {k: base64.b64decode(v).decode() for k, v in
                        data.items()} | (obj or {}).get("stringData", {})
            if ref["key"] in data:
                env[e["name"]] = data[ref["key"]]
            elif not ref.get("optional", False):
                raise ManifestError(f"{pod.name}: {e['name']} needs {kind} "
                                    f"{ref['name']} key {ref['key']}")
        else:
            raise ManifestError(f"{pod.name}: env {e['name']}: a source this "
                                "test does not resolve")
    return env


def container_argv(container, env):
    argv = [expand(a, env) for a in container.get("command", [])]
    argv += [expand(a, env) for a in container.get("args", [])]
    if not argv:
        raise ManifestError(f"container {container['name']}: no command "
                            "(the image has no entrypoint)")
    return argv

#!/usr/bin/env python3
"""Tests deploy/kubernetes/ without a cluster (none is reachable here).

  kubernetes_test.py manifests --source_dir=S
      renders the kustomization (and checks kubectl kustomize, when kubectl
      is installed, renders the same), checks every object against the
      Kubernetes API schema (python3-kubernetes' models) and that the
      objects fit together (counts, names, ports, volumes, images).
  kubernetes_test.py cluster --source_dir=S --bin_dir=B
      runs the job the manifests describe on this machine: every pod in its
      own network namespace with its own address on a bridge, as a node of
      a cluster would have, the Service's DNS names in /etc/hosts, the
      ConfigMap and data volume mounted where the pods mount them (all in a
      private mount namespace: the machine's own files are untouched), and
      each container started with the exact command, arguments and
      environment the manifests give it (the downward API and $(VAR)
      expansion resolved as the kubelet does), as the user the pod's
      securityContext names. The probes are tried as the kubelet would;
      the job must form, train and every container exit 0.
  kubernetes_test.py image --source_dir=S --bin_dir=B
      checks the Dockerfile's stages, and that the programs it installs
      link shared libraries of exactly the Debian packages its runtime
      stage installs (ldd, readelf, dpkg on the build tree's programs).
  kubernetes_test.py image_build --source_dir=S
      builds the image with buildah or podman when PETREL_TEST_IMAGE_BUILD=1
      (PETREL_TEST_DEBIAN_IMAGE names the base; default
      debian:bookworm-slim).

Exit status 0 passed, 1 failed, 77 skipped (with the reason printed).
"""

import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import k8s_image  # noqa: E402
import k8s_local_cluster  # noqa: E402
import k8s_manifests as km  # noqa: E402
from k8s_manifests import fail, find_job, by_kind  # noqa: E402


# ---------------------------------------------------------------------------
# Part 1: the manifests.

def _config_counts(objects):
    cm = {o["metadata"]["name"]: o for o in by_kind(objects, "ConfigMap")}
    text = cm["petrel-job"]["data"]["job.textproto"]
    counts = {}
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip() in ("num_servers", "num_workers"):
            counts[key.strip()] = int(value.split("#")[0])
    return counts


def check_fit(objects):
    """The objects make one job: what a cluster cannot check."""
    counts = _config_counts(objects)
    scheduler, servers, workers = (find_job(objects, c) for c in
                                   ("scheduler", "server", "worker"))
    if scheduler["spec"]["completions"] != 1:
        fail("the scheduler Job must have exactly one pod")
    if servers["spec"]["completions"] != counts["num_servers"]:
        fail(f"servers.yaml completions {servers['spec']['completions']} != "
             f"num_servers {counts['num_servers']} in job.textproto")
    if workers["spec"]["completions"] != counts["num_workers"]:
        fail(f"workers.yaml completions {workers['spec']['completions']} != "
             f"num_workers {counts['num_workers']} in job.textproto")
    pdbs = by_kind(objects, "PodDisruptionBudget")
    if len(pdbs) != 1 or pdbs[0]["spec"].get("minAvailable") != counts[
            "num_servers"]:
        fail("one PodDisruptionBudget with minAvailable = num_servers")
    (service,) = by_kind(objects, "Service")
    if service["spec"].get("clusterIP") != "None":
        fail("the Service must be headless (clusterIP: None)")
    selector = service["spec"]["selector"]
    server_labels = servers["spec"]["template"]["metadata"]["labels"]
    pdb_sel = pdbs[0]["spec"]["selector"]["matchLabels"]
    if any(server_labels.get(k) != v for k, v in pdb_sel.items()):
        fail("the PodDisruptionBudget does not select the servers")
    names = {(o["kind"], o["metadata"]["name"]) for o in objects}
    scheduler_host = (f"{scheduler['metadata']['name']}-0."
                      f"{service['metadata']['name']}")
    for job in (scheduler, servers, workers):
        name = job["metadata"]["name"]
        template = job["spec"]["template"]
        spec = template["spec"]
        if job["spec"].get("completionMode") != "Indexed":
            fail(f"Job {name}: completionMode must be Indexed (rank, DNS)")
        if spec.get("subdomain") != service["metadata"]["name"]:
            fail(f"Job {name}: subdomain must be the Service's name")
        if any(template["metadata"]["labels"].get(k) != v
               for k, v in selector.items()):
            fail(f"Job {name}: the Service does not select its pods")
        sc = spec.get("securityContext", {})
        if not sc.get("runAsNonRoot") or not sc.get("runAsUser"):
            fail(f"Job {name}: pods must run as a non-root user")
        for v in spec.get("volumes", []):
            if "configMap" in v and ("ConfigMap", v["configMap"]["name"]) \
                    not in names:
                fail(f"Job {name}: no ConfigMap {v['configMap']['name']}")
            claim = v.get("persistentVolumeClaim", {}).get("claimName")
            if claim and ("PersistentVolumeClaim", claim) not in names:
                fail(f"Job {name}: no PersistentVolumeClaim {claim}")
        for c in spec["containers"] + spec.get("initContainers", []):
            if not c["image"].startswith("petrel:"):
                fail(f"Job {name}: image {c['image']} is not petrel:VERSION")
            if "limits" not in c.get("resources", {}) or "requests" not in \
                    c["resources"]:
                fail(f"Job {name}/{c['name']}: resources need requests and "
                     "limits")
        for c in spec["containers"]:
            ports = {p["name"]: p["containerPort"] for p in c["ports"]}
            args = c.get("args", [])
            if f"--metrics_port={ports['metrics']}" not in args:
                fail(f"Job {name}: --metrics_port is not the metrics port")
            if f"--port={ports['van']}" not in args:
                fail(f"Job {name}: --port is not the van port")
            probe = c.get("livenessProbe", {}).get("httpGet", {})
            if probe.get("path") != "/healthz" or probe.get("port") not in \
                    ports:
                fail(f"Job {name}: the liveness probe must GET /healthz on "
                     "a named port")
            address = f"--scheduler={scheduler_host}:{ports['van']}"
            if job is not scheduler and address not in args:
                fail(f"Job {name}: --scheduler must be {scheduler_host}")


def render_checked(directory):
    objects = km.render(directory)
    ours = sorted(json.dumps(o, sort_keys=True) for o in objects)
    theirs = km.kubectl_render(directory)
    if theirs is None:
        print(f"kubectl not installed: {directory} rendered by this test only")
    elif ours != sorted(json.dumps(o, sort_keys=True) for o in theirs):
        fail(f"kubectl kustomize {directory} renders differently from this "
             "test's renderer:\n" + "\n".join(ours) + "\n---\n" + "\n".join(
                 sorted(json.dumps(o, sort_keys=True) for o in theirs)))
    else:
        print(f"kubectl kustomize {directory}: {len(objects)} objects, "
              "the same as rendered here")
    for o in objects:
        km.check_schema(o)
    print(f"{directory}: every object fits the Kubernetes API schema")
    return objects


def part_manifests(args):
    try:
        import kubernetes  # noqa: F401
    except ImportError:
        fail("python3-kubernetes is missing (deploy/install-deps.sh "
             "installs it)")
    top = os.path.join(args.source_dir, "deploy", "kubernetes")
    base = os.path.join(top, "base")
    # Every YAML file parses, including any the kustomization leaves out.
    for root, _, files in os.walk(top):
        for f in files:
            if f.endswith((".yaml", ".yml")):
                km._load_all(os.path.join(root, f))
    objects = render_checked(base)
    check_fit(objects)
    gpu = render_checked(os.path.join(top, "gpu"))
    check_fit(gpu)
    worker = find_job(gpu, "worker")["spec"]["template"]["spec"][
        "containers"][0]
    if "--device=cuda" not in worker["args"] or "nvidia.com/gpu" not in \
            worker["resources"]["limits"]:
        fail("the gpu overlay must give workers a GPU and --device=cuda")
    # The schema check refuses what it should.
    bad = json.loads(json.dumps(find_job(objects, "server")))
    bad["spec"]["template"]["spec"]["containers"][0]["argz"] = []
    try:
        km.check_schema(bad)
        fail("the schema check accepted a misspelt field")
    except km.ManifestError as e:
        print(f"refused as expected: {e}")
    print("manifests: passed")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("part", choices=["manifests", "cluster", "image",
                                         "image_build", "inside"])
    parser.add_argument("--source_dir", required=True)
    parser.add_argument("--bin_dir")
    parser.add_argument("--work")
    parser.add_argument("--no_setuid", action="store_true")
    args = parser.parse_args()
    args.source_dir = os.path.abspath(args.source_dir)
    try:
        script = os.path.abspath(__file__)
        {"manifests": part_manifests,
         "cluster": lambda a: k8s_local_cluster.part_cluster(a, script),
         "image": k8s_image.part_image,
         "image_build": k8s_image.part_image_build,
         "inside": k8s_local_cluster.inside}[args.part](args)
    except (km.Failure, km.ManifestError) as e:
        print(f"FAILED: {e}")
        sys.exit(1)


if __name__ == "__main__":
    main()

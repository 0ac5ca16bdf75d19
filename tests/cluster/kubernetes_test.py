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
import base64
import fcntl
import json
import os
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import k8s_manifests as km  # noqa: E402

SKIP = 77
NAMESPACE = "default"
SUBNET = "10.244.0"  # pod addresses SUBNET.2, .3, ...; the bridge .1
IMAGE_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
DEADLINE_S = 90


class Failure(Exception):
    pass


def fail(msg):
    raise Failure(msg)


def skip(reason):
    print(f"SKIPPED: {reason}")
    sys.exit(SKIP)


# ---------------------------------------------------------------------------
# Part 1: the manifests.

def _by_kind(objects, kind):
    return [o for o in objects if o["kind"] == kind]


def _job(objects, component):
    for o in _by_kind(objects, "Job"):
        if o["metadata"]["labels"].get("app.kubernetes.io/component") == (
                component):
            return o
    fail(f"no Job with app.kubernetes.io/component={component}")


def _config_counts(objects):
    cm = {o["metadata"]["name"]: o for o in _by_kind(objects, "ConfigMap")}
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
    scheduler, servers, workers = (_job(objects, c) for c in
                                   ("scheduler", "server", "worker"))
    if scheduler["spec"]["completions"] != 1:
        fail("the scheduler Job must have exactly one pod")
    if servers["spec"]["completions"] != counts["num_servers"]:
        fail(f"servers.yaml completions {servers['spec']['completions']} != "
             f"num_servers {counts['num_servers']} in job.textproto")
    if workers["spec"]["completions"] != counts["num_workers"]:
        fail(f"workers.yaml completions {workers['spec']['completions']} != "
             f"num_workers {counts['num_workers']} in job.textproto")
    pdbs = _by_kind(objects, "PodDisruptionBudget")
    if len(pdbs) != 1 or pdbs[0]["spec"].get("minAvailable") != counts[
            "num_servers"]:
        fail("one PodDisruptionBudget with minAvailable = num_servers")
    (service,) = _by_kind(objects, "Service")
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
            if job is not scheduler and (
                    f"--scheduler={scheduler_host}:{ports['van']}" not in args):
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
    worker = _job(gpu, "worker")["spec"]["template"]["spec"]["containers"][0]
    if "--device=cuda" not in worker["args"] or "nvidia.com/gpu" not in \
            worker["resources"]["limits"]:
        fail("the gpu overlay must give workers a GPU and --device=cuda")
    # The schema check refuses what it should.
    bad = json.loads(json.dumps(_job(objects, "server")))
    bad["spec"]["template"]["spec"]["containers"][0]["argz"] = []
    try:
        km.check_schema(bad)
        fail("the schema check accepted a misspelt field")
    except km.ManifestError as e:
        print(f"refused as expected: {e}")
    print("manifests: passed")


# ---------------------------------------------------------------------------
# Part 2: run the job's pods here.

def _run(*argv):
    r = subprocess.run(argv, capture_output=True, text=True, timeout=30)
    if r.returncode != 0:
        fail(f"{' '.join(argv)}: exit {r.returncode}: {r.stderr.strip()}")
    return r


def _lo_up():
    """Brings up lo in this (new) network namespace (SIOCSIFFLAGS)."""
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    ifreq = struct.pack("16sH14s", b"lo", 0x1 | 0x40, b"")  # UP|RUNNING
    fcntl.ioctl(s.fileno(), 0x8914, ifreq)
    s.close()


def _mount_at(src, target, read_only, overlays, work):
    """Bind-mounts `src` at `target`, creating `target` in an overlay of its
    deepest existing ancestor (only in this mount namespace)."""
    ancestor = target
    while not os.path.exists(ancestor):
        ancestor = os.path.dirname(ancestor)
    if ancestor != target and ancestor not in overlays:
        if ancestor == "/":
            fail(f"mount path {target}: pick one under an existing directory")
        d = tempfile.mkdtemp(dir=work, prefix="overlay-")
        os.makedirs(f"{d}/upper")
        os.makedirs(f"{d}/work")
        _run("mount", "-t", "overlay", "overlay", "-o",
             f"lowerdir={ancestor},upperdir={d}/upper,workdir={d}/work",
             ancestor)
        overlays.add(ancestor)
    os.makedirs(target, exist_ok=True)
    _run("mount", "--bind", src, target)
    if read_only:
        _run("mount", "-o", "remount,bind,ro", target)


class PodNet:
    """A network namespace holding one pod's address, like a node's pod
    network: a veth pair to the bridge. The namespace lives as long as its
    holder process, which ends when its standard input closes."""

    def __init__(self, ip):
        self.ip = ip
        self.holder = subprocess.Popen(
            ["unshare", "--net", "--", "cat"], stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL)
        pid = str(self.holder.pid)
        # The holder may not have unshared yet: wait until its namespace
        # differs from ours.
        deadline = time.monotonic() + 10
        mine = os.readlink("/proc/self/ns/net")
        while os.readlink(f"/proc/{pid}/ns/net") == mine:
            if time.monotonic() > deadline:
                fail("unshare --net did not start")
            time.sleep(0.01)
        host_if = f"vp{ip.split('.')[-1]}"
        _run("ip", "link", "add", host_if, "type", "veth", "peer", "name",
             "eth0", "netns", pid)
        _run("ip", "link", "set", host_if, "master", "petrel-br", "up")
        nsenter = ["nsenter", f"--net=/proc/{pid}/ns/net", "--"]
        _run(*nsenter, "ip", "addr", "add", f"{ip}/24", "dev", "eth0")
        _run(*nsenter, "ip", "link", "set", "eth0", "up")
        _run(*nsenter, "ip", "link", "set", "lo", "up")
        _run(*nsenter, "ip", "route", "add", "default", "via", f"{SUBNET}.1")
        self.netns = f"/proc/{pid}/ns/net"

    def close(self):
        self.holder.stdin.close()
        self.holder.wait(timeout=10)


def _probe(ip, port, path, deadline):
    url = f"http://{ip}:{port}{path}"
    last = None
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=2) as r:
                if r.status == 200:
                    return
        except OSError as e:
            last = e
        time.sleep(0.05)
    fail(f"probe {url} did not answer 200 in time ({last})")


def _ready_line(path):
    with open(path, errors="replace") as f:
        for line in f:
            if line.startswith(("PETREL_READY", "PETREL_LISTEN")):
                return dict(kv.split("=", 1) for kv in line.split()[1:])
    return None


def _generate_data(bin_dir, data_dir):
    os.makedirs(data_dir)
    subprocess.run([os.path.join(bin_dir, "petrel-datagen"),
                    "--format=libsvm", "--train_examples=20000",
                    "--test_examples=4000", "--seed=7",
                    f"--train_out={data_dir}/train.libsvm",
                    f"--test_out={data_dir}/test.libsvm"],
                   check=True, capture_output=True, timeout=60)


def _pod_network():
    """lo, and the bridge the pods' veths join (the node's pod network)."""
    _lo_up()
    bridge = subprocess.run(["ip", "link", "add", "petrel-br", "type",
                             "bridge"], capture_output=True, text=True)
    if bridge.returncode != 0:
        skip(f"cannot create a bridge for the pods' network here: "
             f"{bridge.stderr.strip()}")
    _run("ip", "addr", "add", f"{SUBNET}.1/24", "dev", "petrel-br")
    _run("ip", "link", "set", "petrel-br", "up")


def _volume_key(volume, mount, volume_dirs, work):
    if "configMap" in volume:
        return ("configMap", volume["configMap"]["name"])
    if "persistentVolumeClaim" in volume:
        return ("persistentVolumeClaim",
                volume["persistentVolumeClaim"]["claimName"])
    if "emptyDir" in volume:
        # One directory for every pod that mounts it here (a cluster gives
        # each pod its own).
        key = ("emptyDir", mount["mountPath"])
        if key not in volume_dirs:
            volume_dirs[key] = tempfile.mkdtemp(dir=work, prefix="empty-")
        return key
    fail(f"volume {volume['name']}: a kind this test does not mount")


def _mount_volumes(objects, pods, work, bin_dir):
    """ConfigMaps as files, the PersistentVolumeClaim as a directory of
    generated data, each at its mountPath. All pods share this mount
    namespace, so a path must hold the same volume in every pod."""
    volume_dirs = {}
    for cm in _by_kind(objects, "ConfigMap"):
        d = os.path.join(work, "configmap-" + cm["metadata"]["name"])
        os.makedirs(d)
        for k, v in cm["data"].items():
            with open(os.path.join(d, k), "w") as f:
                f.write(v)
        volume_dirs[("configMap", cm["metadata"]["name"])] = d
    for pvc in _by_kind(objects, "PersistentVolumeClaim"):
        d = os.path.join(work, "pvc-" + pvc["metadata"]["name"])
        _generate_data(bin_dir, os.path.join(d, "data"))
        volume_dirs[("persistentVolumeClaim", pvc["metadata"]["name"])] = d
    mounted, overlays = {}, set()
    for pod in pods:
        volumes = {v["name"]: v for v in pod.spec.get("volumes", [])}
        for c in pod.spec["containers"] + pod.spec.get("initContainers", []):
            for m in c.get("volumeMounts", []):
                key = _volume_key(volumes[m["name"]], m, volume_dirs, work)
                path = m["mountPath"]
                if path in mounted:
                    if mounted[path] != key:
                        fail(f"{path}: different volumes in different pods")
                    continue
                _mount_at(volume_dirs[key], path, m.get("readOnly", False),
                          overlays, work)
                mounted[path] = key


def _pod_dns(pods, work):
    """The Service's DNS: every pod's names in /etc/hosts, and no DNS
    server, so that a name it lacks fails at once instead of waiting for a
    server this network cannot reach."""
    with open(os.path.join(work, "hosts"), "w") as f:
        with open("/etc/hosts") as orig:
            f.write(orig.read())
        for p in pods:
            if p.dns_names(NAMESPACE):
                f.write(f"{p.ip} {' '.join(p.dns_names(NAMESPACE))}\n")
    _run("mount", "--bind", os.path.join(work, "hosts"), "/etc/hosts")
    with open(os.path.join(work, "resolv.conf"), "w") as f:
        f.write("options attempts:1 timeout:1\n")
    _run("mount", "--bind", os.path.join(work, "resolv.conf"),
         "/etc/resolv.conf")


def _kubelet_probes(pod, container, deadline):
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    for kind in ("startupProbe", "readinessProbe", "livenessProbe"):
        probe = container.get(kind, {}).get("httpGet")
        if probe is None:
            continue
        port = ports.get(probe["port"], probe["port"])
        _probe(pod.ip, port, probe["path"], deadline)
        print(f"  {kind} GET {pod.ip}:{port}{probe['path']}: 200")


def _check_uid(pid, uid):
    with open(f"/proc/{pid}/status") as f:
        uids = next(ln for ln in f if ln.startswith("Uid:")).split()[1:]
    if any(int(u) != uid for u in uids):
        fail(f"process {pid} runs as uid {uids}, not the pod's {uid}")
    print(f"  runs as uid {uid}")


class PodRunner:
    """Starts the pods' containers as the kubelet would, each in its pod's
    network namespace, as the pod's user."""

    def __init__(self, objects, image, work, setuid):
        self.objects, self.image, self.work = objects, image, work
        self.setuid = setuid
        self.deadline = time.monotonic() + DEADLINE_S
        self.running = []  # (pod, Popen, log path)
        self.nets = []

    def start(self, pod, probe):
        net = PodNet(pod.ip)
        self.nets.append(net)
        sc = pod.spec.get("securityContext", {})
        user = []
        if self.setuid:
            user = ["--setuid", str(sc["runAsUser"]),
                    "--setgid", str(sc.get("runAsGroup", sc["runAsUser"]))]
        inits = pod.spec.get("initContainers", [])
        for c in inits + pod.spec["containers"]:
            env = km.container_env(pod, c, self.objects, NAMESPACE)
            if c not in inits and "FLAGS_auth_token" not in env:
                fail(f"{pod.name}: the Secret's auth-token did not reach "
                     f"{c['name']}")
            argv = km.container_argv(c, env)
            env["PATH"] = f"{self.image}:{IMAGE_PATH}"
            log = os.path.join(self.work, f"{pod.name}.{c['name']}.log")
            print(f"{pod.name} ({pod.ip}) {c['name']}: {' '.join(argv)}",
                  flush=True)
            with open(log, "w") as out:
                proc = subprocess.Popen(
                    ["nsenter", f"--net={net.netns}", *user, "--", *argv],
                    env=env, stdout=out, stderr=subprocess.STDOUT, cwd="/")
            if c in inits:
                rc = proc.wait(timeout=self.left())
                if rc != 0:
                    fail(f"{pod.name} init container {c['name']} exited "
                         f"{rc}: {open(log).read()}")
                continue
            self.running.append((pod, proc, log))
            if probe:
                _kubelet_probes(pod, c, self.deadline)
                # It answered, so it runs the program now, not nsenter.
                if self.setuid:
                    _check_uid(proc.pid, sc["runAsUser"])

    def left(self):
        return max(1, self.deadline - time.monotonic())

    def wait(self):
        """{pod name: (exit code, pod, log path)}."""
        results = {}
        for pod, proc, log in self.running:
            try:
                rc = proc.wait(timeout=self.left())
            except subprocess.TimeoutExpired:
                rc = "still running at the deadline"
            results[pod.name] = (rc, pod, log)
        return results

    def close(self):
        for _, proc, _ in self.running:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        for net in self.nets:
            net.close()


def _check_results(results):
    logs = "".join(f"==== {name}\n{open(log, errors='replace').read()}"
                   for name, (_, _, log) in results.items())
    bad = {n: rc for n, (rc, _, _) in results.items() if rc != 0}
    if bad:
        fail(f"containers did not exit 0: {bad}\n{logs}")
    # Each node advertised its own pod address and took its index as rank.
    for name, (_, pod, log) in results.items():
        line = _ready_line(log)
        if line is None:
            fail(f"{name}: no PETREL_READY/PETREL_LISTEN line\n{logs}")
        # The others reach the scheduler by its DNS name, not by the
        # address it advertises.
        if pod.labels["app.kubernetes.io/component"] == "scheduler":
            continue
        if line.get("host") != pod.ip:
            fail(f"{name}: advertised {line.get('host')}, not its pod "
                 f"address {pod.ip}\n{logs}")
        if int(line["rank"]) != pod.index:
            fail(f"{name}: rank {line['rank']}, not its index {pod.index}")
    final = [ln for ln in logs.splitlines() if "final" in ln and
             "test_logloss=" in ln]
    if not final:
        fail(f"no worker reported a final test logloss\n{logs}")
    loss = float(final[0].split("test_logloss=")[1].split()[0])
    if not 0 < loss < 0.6:
        fail(f"final test logloss {loss} is not below 0.6\n{logs}")
    print(final[0])
    print(f"cluster: {len(results)} containers exited 0, test_logloss={loss}")


def inside(args):
    """In the new network and mount namespaces: set up and run the job."""
    top = os.path.join(args.source_dir, "deploy", "kubernetes")
    objects = km.render(os.path.join(top, "base"))
    # The optional Secret, as `kubectl create secret generic petrel-secrets
    # --from-literal=auth-token=...` makes it (docs/kubernetes.md): every
    # daemon then presents the same token.
    objects.append({"apiVersion": "v1", "kind": "Secret",
                    "metadata": {"name": "petrel-secrets"},
                    "data": {"auth-token": base64.b64encode(
                        os.urandom(16).hex().encode()).decode()}})
    work = args.work
    _pod_network()
    # The image: the programs the pods run, as the Dockerfile installs them.
    image = os.path.join(work, "image-bin")
    os.makedirs(image)
    for b in ("petrel-scheduler", "petrel-server", "petrel-worker"):
        shutil.copy2(os.path.join(args.bin_dir, b), image)
    shutil.copy2(os.path.join(top, "petrel-wait-for-host"), image)
    pods = km.job_pods(objects)
    for i, pod in enumerate(pods):
        pod.ip = f"{SUBNET}.{i + 2}"
    _mount_volumes(objects, pods, work, args.bin_dir)
    _pod_dns(pods, work)
    # The pods' user must reach the image and the volumes.
    for root, _, files in os.walk(work):
        os.chmod(root, 0o755)
        for f in files:
            os.chmod(os.path.join(root, f), 0o755)
    runner = PodRunner(objects, image, work,
                       setuid=os.geteuid() == 0 and not args.no_setuid)
    try:
        for pod in pods:
            # The kubelet's probes answer while a node waits for the cluster
            # to form; the last pod completes it, and may end at once.
            runner.start(pod, probe=pod is not pods[-1])
        results = runner.wait()
    finally:
        runner.close()
    _check_results(results)


def part_cluster(args):
    for tool in ("unshare", "nsenter", "ip", "mount"):
        if shutil.which(tool) is None:
            fail(f"{tool} is missing (util-linux, iproute2: "
                 "deploy/install-deps.sh)")
    unshare = ["unshare", "--net", "--mount", "--propagation", "private"]
    if os.geteuid() != 0:
        unshare.insert(1, "--map-root-user")
    probe = subprocess.run(unshare + ["true"], capture_output=True, text=True)
    if probe.returncode != 0:
        skip("cannot create network and mount namespaces here "
             f"({' '.join(unshare)}: {probe.stderr.strip()})")
    work = tempfile.mkdtemp(prefix="petrel_k8s_test_")
    try:
        argv = unshare + ["--", sys.executable, os.path.abspath(__file__),
                          "inside", f"--source_dir={args.source_dir}",
                          f"--bin_dir={args.bin_dir}", f"--work={work}"]
        if os.geteuid() != 0:
            argv.append("--no_setuid")
        rc = subprocess.run(argv, timeout=DEADLINE_S + 60).returncode
        if rc != 0:
            sys.exit(rc)
    finally:
        shutil.rmtree(work, ignore_errors=True)


# ---------------------------------------------------------------------------
# Part 3: the image.

def read_dockerfile(path):
    """The Dockerfile's instructions as (INSTRUCTION, text) per stage."""
    with open(path) as f:
        text = f.read()
    lines, cur = [], ""
    for raw in text.splitlines():
        if not cur and (raw.lstrip().startswith("#") or not raw.strip()):
            continue
        if raw.lstrip().startswith("#"):
            continue  # a comment inside a continued instruction
        if raw.endswith("\\"):
            cur += raw[:-1] + " "
            continue
        lines.append(cur + raw)
        cur = ""
    args, stages = {}, []
    for line in lines:
        word, _, rest = line.strip().partition(" ")
        word = word.upper()
        if word == "FROM":
            stages.append([])
        if not stages:
            if word == "ARG":
                name, _, default = rest.partition("=")
                args[name.strip()] = default.strip()
            continue
        stages[-1].append((word, " ".join(rest.split())))
    return args, stages


def _words_after(text, word, stop=("&&",)):
    words = text.split()
    out = []
    for w in words[words.index(word) + 1:]:
        if w in stop:
            break
        if not w.startswith("-"):
            out.append(w)
    return out


def image_facts(source_dir):
    args, stages = read_dockerfile(os.path.join(source_dir, "Dockerfile"))
    if len(stages) != 2:
        fail("the Dockerfile must have two stages (builder, runtime)")
    base = args.get("DEBIAN_IMAGE", "")
    if not base.startswith("debian:bookworm"):
        fail(f"the base image {base!r} is not Debian 12 (debian:bookworm*)")
    for stage in stages:
        if stage[0][1].split()[0] != "${DEBIAN_IMAGE}":
            fail(f"stage FROM {stage[0][1]} is not the Debian base")
    builder, runtime = stages
    build = " ".join(t for w, t in builder if w == "RUN")
    if "deploy/install-deps.sh" not in build or (
            "-DCMAKE_BUILD_TYPE=Release" not in build):
        fail("the builder must install deploy/install-deps.sh and build "
             "Release")
    targets = _words_after(build, "--target")
    copied = list(targets)
    if "deploy/kubernetes/petrel-wait-for-host" in build:
        copied.append("petrel-wait-for-host")
    run = " ".join(t for w, t in runtime if w == "RUN")
    packages = _words_after(run, "install")
    users = [t for w, t in runtime if w == "USER"]
    if not any(w == "COPY" and t.startswith("--from=builder") for w, t in
               runtime):
        fail("the runtime stage must copy the programs from the builder")
    return {"targets": targets, "programs": copied, "packages": packages,
            "user": users[-1] if users else None}


def _owner_packages(paths):
    """{path: Debian package holding it} for `paths`, in one dpkg -S."""
    paths = sorted(set(paths))
    queries = {p: p for p in paths}
    queries.update({os.path.realpath(p): p for p in paths})
    r = subprocess.run(["dpkg", "-S", *queries], capture_output=True,
                       text=True)
    owners = {}
    for line in r.stdout.splitlines():
        pkgs, _, path = line.partition(": ")
        if path in queries:
            owners[queries[path]] = pkgs.split(",")[0].split(":")[0].strip()
    return owners


def _dependency_closure(packages):
    """`packages` and everything they depend on, as installed here."""
    out = subprocess.run(
        ["dpkg-query", "-W", "-f=${Package}\t${Depends}, ${Pre-Depends}\n"],
        capture_output=True, text=True, check=True).stdout
    depends = {}
    for line in out.splitlines():
        name, _, deps = line.partition("\t")
        depends[name] = [alt.split("(")[0].split(":")[0].strip()
                         for dep in deps.split(",") for alt in dep.split("|")]
    seen, todo = set(), list(packages)
    while todo:
        p = todo.pop()
        if p and p not in seen:
            seen.add(p)
            todo.extend(depends.get(p, []))
    return seen


def part_image(args):
    facts = image_facts(args.source_dir)
    objects = km.render(os.path.join(args.source_dir, "deploy", "kubernetes",
                                     "base"))
    # The manifests run programs the image has, as the image's user.
    tags = set()
    for job in _by_kind(objects, "Job"):
        spec = job["spec"]["template"]["spec"]
        sc = spec["securityContext"]
        user = f"{sc['runAsUser']}:{sc.get('runAsGroup', sc['runAsUser'])}"
        if facts["user"] != user:
            fail(f"the image's USER {facts['user']} is not the pods' {user}")
        for c in spec["containers"] + spec.get("initContainers", []):
            tags.add(c["image"])
            if c["command"][0] not in facts["programs"]:
                fail(f"{c['command'][0]} is not in the image")
    if len(tags) != 1:
        fail(f"the manifests use several images: {sorted(tags)}")
    print(f"manifests run {tags.pop()}, as user {facts['user']}")
    # The libraries the programs link (ELF NEEDED) come from exactly the
    # Debian packages the runtime stage installs; those the libraries load
    # in turn come with them (their packages' dependencies).
    for tool in ("dpkg", "dpkg-query", "ldd", "readelf"):
        if shutil.which(tool) is None:
            skip(f"{tool} is needed to check the image's libraries")
    direct, loaded, libs = {}, {}, []
    for t in facts["targets"]:
        path = os.path.join(args.bin_dir, t)
        if not os.path.exists(path):
            fail(f"{path} is missing: build the target {t}")
        resolved = {}
        out = subprocess.run(["ldd", path], capture_output=True, text=True,
                             check=True).stdout
        for line in out.splitlines():
            if "not found" in line:
                fail(f"{t}: {line.strip()}")
            name, _, where = line.strip().partition(" => ")
            lib = (where or name).split()[0]
            if lib.startswith("/"):
                resolved[os.path.basename(name.split()[0])] = lib
        elf = subprocess.run(["readelf", "-d", path], capture_output=True,
                             text=True, check=True).stdout
        needed = [ln.split("[")[1].split("]")[0] for ln in elf.splitlines()
                  if "(NEEDED)" in ln]
        for soname, lib in resolved.items():
            if lib.startswith("/usr/local/cuda") or soname.startswith(
                    ("libcuda", "libcublas", "libcudart", "libnvidia")):
                print(f"{t}: {soname} left out (this build has CUDA; the "
                      "image's is built without)")
                continue
            libs.append((t, soname, lib, soname in needed))
    owners = _owner_packages(lib for _, _, lib, _ in libs)
    for t, soname, lib, is_direct in libs:
        if lib not in owners:
            fail(f"{t} loads {lib}, which no Debian package holds")
        (direct if is_direct else loaded).setdefault(owners[lib],
                                                     set()).add(soname)
    explicit = set(facts["packages"])
    missing = sorted(set(direct) - explicit)
    if missing:
        fail("the runtime stage lacks "
             + ", ".join(f"{p} ({', '.join(sorted(direct[p]))})"
                         for p in missing))
    extra = sorted(explicit - set(direct))
    if extra:
        fail(f"the runtime stage installs packages no program links: {extra}")
    closure = _dependency_closure(explicit)
    stray = sorted(set(loaded) - closure)
    if stray:
        fail(f"libraries from packages the runtime stage does not pull in: "
             f"{stray}")
    print(f"{len(facts['targets'])} programs link libraries of exactly the "
          f"runtime stage's packages ({' '.join(sorted(direct))}); the "
          f"{len(loaded)} packages those load come with them")
    print("image: passed")


def part_image_build(args):
    """Builds the image with buildah (from Debian) when asked to (it takes as
    long as a full build), then runs its programs inside it."""
    if os.environ.get("PETREL_TEST_IMAGE_BUILD") != "1":
        skip("building the image compiles Petrel from scratch (minutes); "
             "set PETREL_TEST_IMAGE_BUILD=1 to run it")
    buildah = shutil.which("buildah")
    if buildah is None:
        skip("no container builder: apt-get install buildah")
    base = os.environ.get("PETREL_TEST_DEBIAN_IMAGE", "debian:bookworm-slim")
    tag = "localhost/petrel:test"
    # chroot isolation: RUN steps need no OCI runtime (crun may be refused
    # its rlimits in a sandbox).
    cmd = [buildah, "bud", "--layers", "--isolation=chroot", "--build-arg",
           f"DEBIAN_IMAGE={base}", "-t", tag, args.source_dir]
    print(" ".join(cmd), flush=True)
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True)
    if r.returncode != 0:
        tail = "\n".join(r.stdout.splitlines()[-15:])
        fail(f"the image did not build:\n{tail}")
    ctr = subprocess.run([buildah, "from", tag], capture_output=True,
                         text=True, check=True).stdout.strip()
    try:
        script = ("id -u; for p in /usr/local/bin/petrel-*; do "
                  "[ \"${p##*/}\" = petrel-wait-for-host ] && continue; "
                  "if ldd \"$p\" | grep 'not found'; then exit 1; fi; "
                  "echo \"${p##*/}: every library found\"; done; "
                  "petrel-scheduler --help > /dev/null && echo runs")
        r = subprocess.run([buildah, "run", "--isolation=chroot", ctr, "--",
                            "sh", "-c", script], capture_output=True,
                           text=True)
        print(r.stdout + r.stderr)
        if r.returncode != 0 or r.stdout.split()[0] != "10001" or (
                "runs" not in r.stdout.split()):
            fail("the image's programs do not all load and run as uid "
                 "10001")
    finally:
        subprocess.run([buildah, "rm", ctr], capture_output=True)
    print(f"image_build: {tag} built; its programs load and run")


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
        {"manifests": part_manifests, "cluster": part_cluster,
         "image": part_image, "image_build": part_image_build,
         "inside": inside}[args.part](args)
    except (Failure, km.ManifestError) as e:
        print(f"FAILED: {e}")
        sys.exit(1)


if __name__ == "__main__":
    main()

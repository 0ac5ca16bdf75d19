"""Runs the job deploy/kubernetes/ describes on this machine, as a cluster
would run its pods (kubernetes_test.py cluster): each pod in a network
namespace of its own with an address on a bridge, the Service's DNS names
in a private /etc/hosts, the volumes mounted where the pods mount them (in
a private mount namespace), and each container started with the command,
arguments and environment the manifests give it, as the pod's user.
"""

import base64
import fcntl
import os
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import time
import urllib.request

import k8s_manifests as km
from k8s_manifests import by_kind, fail, skip

NAMESPACE = "default"
SUBNET = "10.244.0"  # pod addresses SUBNET.2, .3, ...; the bridge .1
IMAGE_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
DEADLINE_S = 90


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
    # Straight to the pod, as the kubelet does: no http_proxy.
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    last = None
    while time.monotonic() < deadline:
        try:
            with opener.open(url, timeout=2) as r:
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
    for cm in by_kind(objects, "ConfigMap"):
        d = os.path.join(work, "configmap-" + cm["metadata"]["name"])
        os.makedirs(d)
        for k, v in cm["data"].items():
            with open(os.path.join(d, k), "w") as f:
                f.write(v)
        volume_dirs[("configMap", cm["metadata"]["name"])] = d
    for pvc in by_kind(objects, "PersistentVolumeClaim"):
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


def part_cluster(args, script):
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
        argv = unshare + ["--", sys.executable, script,
                          "inside", f"--source_dir={args.source_dir}",
                          f"--bin_dir={args.bin_dir}", f"--work={work}"]
        if os.geteuid() != 0:
            argv.append("--no_setuid")
        rc = subprocess.run(argv, timeout=DEADLINE_S + 60).returncode
        if rc != 0:
            sys.exit(rc)
    finally:
        shutil.rmtree(work, ignore_errors=True)

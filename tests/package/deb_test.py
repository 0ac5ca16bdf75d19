"""The Debian package, built and checked without installing it here.

Builds the package with cpack -G DEB from the build tree (into a temporary
directory), then checks, for real, what can run on a machine whose PID 1 is
not systemd and whose root must stay untouched:
  - its control fields (name, version, dpkg-shlibdeps' Depends, conffiles)
    and contents (binaries, library, headers, units, /etc/petrel; no test or
    benchmark binary);
  - the unpacked binaries' shared libraries resolve, and their --version;
  - `systemd-analyze verify` of the units inside the unpacked tree (with
    this machine's own units beside them, for the targets they name);
  - the maintainer scripts, run in a private mount namespace over a copy of
    /etc and an empty /var/lib: postinst makes the petrel system user and
    /var/lib/petrel, postrm remove keeps them, postrm purge removes them;
  - a job started from the unpacked package exactly as the units' ExecStart
    and EnvironmentFile lines say (petrel-scheduler.service,
    petrel-server@0.service, petrel-worker@0.service; the configuration
    edited as an administrator would, to loopback and a free port): the
    server joins and the worker's push/pull check passes. Not as the petrel
    user, and not under systemd (systemctl start needs systemd as PID 1).

  deb_test.py --build-dir=BUILD --version=X.Y.Z [--cpack=cpack]
"""

import argparse
import os
import re
import shutil
import sys
import tempfile
import unittest

import procs

ARGS = None
BINARIES = ["petrel-bench", "petrel-datagen", "petrel-export",
            "petrel-launch", "petrel-predict", "petrel-scheduler",
            "petrel-server", "petrel-worker", "petrelctl", "petrel-keygen"]
SCRIPTS = ["petrel-plot"]  # Python: no --version, no ELF
UNITS = ["petrel-scheduler.service", "petrel-server@.service",
         "petrel-worker@.service"]
UNIT_DIR = "/usr/lib/systemd/system"
CONF_FILES = ["cluster.conf", "scheduler.conf", "server.conf", "worker.conf"]


def parse_unit(path, instance=""):
    """The [Service] section's EnvironmentFile list (optional ones keep
    their '-') and ExecStart, with %i replaced by `instance`."""
    env_files, exec_start, section = [], None, None
    with open(path) as unit:
        for raw in unit:
            line = raw.strip()
            if not line or line.startswith(("#", ";")):
                continue
            if line.startswith("["):
                section = line
                continue
            key, _, value = line.partition("=")
            value = value.replace("%i", instance)
            if section == "[Service]" and key == "EnvironmentFile":
                env_files.append(value)
            elif section == "[Service]" and key == "ExecStart":
                exec_start = value
    return env_files, exec_start


def parse_env_file(path):
    """KEY=value lines as systemd reads an EnvironmentFile (comments, blank
    lines and one pair of surrounding quotes)."""
    values = {}
    with open(path) as env:
        for raw in env:
            line = raw.strip()
            if not line or line.startswith(("#", ";")):
                continue
            key, sep, value = line.partition("=")
            if not sep:
                raise AssertionError(f"{path}: not KEY=value: {line!r}")
            value = value.strip()
            if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
                value = value[1:-1]
            values[key.strip()] = value
    return values


def unit_command(root, unit_name, instance=""):
    """The argv and environment systemd would run `unit_name` with, from the
    unpacked tree `root`: EnvironmentFile= read in order (a '-' one only
    when present) into the environment, $VAR split at whitespace, ${VAR}
    kept whole, and the program looked up under `root`. Returns (argv,
    environment, the EnvironmentFile= values)."""
    env_files, exec_start = parse_unit(
        os.path.join(root, UNIT_DIR.lstrip("/"), unit_name), instance)
    if exec_start is None:
        raise AssertionError(f"{unit_name}: no ExecStart")
    env = {}
    for env_file in env_files:
        optional = env_file.startswith("-")
        path = os.path.join(root, env_file.lstrip("-").lstrip("/"))
        if optional and not os.path.exists(path):
            continue
        env.update(parse_env_file(path))
    argv = []
    for word in exec_start.split():
        if re.fullmatch(r"\$[A-Za-z_][A-Za-z0-9_]*", word):
            argv += env.get(word[1:], "").split()
        else:
            argv.append(re.sub(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}",
                               lambda m: env.get(m.group(1), ""), word))
    if not argv[0].startswith("/"):
        raise AssertionError(f"{unit_name}: ExecStart is not absolute")
    argv[0] = os.path.join(root, argv[0].lstrip("/"))
    environment = dict(os.environ)
    environment.update(env)
    return argv, environment, env_files


class DebTest(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        for tool in ["dpkg-deb", "dpkg-shlibdeps"]:
            if shutil.which(tool) is None:
                raise unittest.SkipTest(f"{tool} is not installed (Debian's "
                                        "dpkg / dpkg-dev)")
        cls.tmp = tempfile.mkdtemp(prefix="petrel-deb-test-")
        out = os.path.join(cls.tmp, "out")
        procs.check_run([ARGS.cpack, "-G", "DEB", "--config",
                         os.path.join(ARGS.build_dir, "CPackConfig.cmake"),
                         "-B", out], timeout_s=300)
        debs = [name for name in os.listdir(out) if name.endswith(".deb")]
        if len(debs) != 1:
            raise AssertionError(f"cpack wrote {debs}, not one .deb")
        cls.deb = os.path.join(out, debs[0])
        cls.root = os.path.join(cls.tmp, "root")
        procs.check_run(["dpkg-deb", "-x", cls.deb, cls.root], timeout_s=60)
        cls.control = os.path.join(cls.tmp, "control")
        procs.check_run(["dpkg-deb", "-e", cls.deb, cls.control], timeout_s=60)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def field(self, name):
        return procs.check_run(["dpkg-deb", "-f", self.deb, name],
                               timeout_s=30).stdout.strip()

    def test_control_fields(self):
        self.assertEqual(os.path.basename(self.deb),
                         f"petrel_{ARGS.version}_{self.field('Architecture')}.deb")
        self.assertEqual(self.field("Package"), "petrel")
        self.assertEqual(self.field("Version"), ARGS.version)
        depends = self.field("Depends")
        # adduser for postinst; the rest from dpkg-shlibdeps.
        for package in ["adduser", "libzmq5", "libprotobuf32", "libc6",
                        "libgoogle-glog0v6", "libgflags2.2", "libabsl"]:
            self.assertIn(package, depends)
        info = procs.check_run(["dpkg-deb", "-I", self.deb], timeout_s=30)
        for script in ["postinst", "prerm", "postrm"]:
            self.assertRegex(info.stdout, rf"\*\s+{script}\s")
        with open(os.path.join(self.control, "conffiles")) as conffiles:
            self.assertEqual(conffiles.read().split(),
                             [f"/etc/petrel/{name}" for name in CONF_FILES])

    def test_contents(self):
        listing = procs.check_run(["dpkg-deb", "-c", self.deb], timeout_s=30)
        paths = {line.split()[-1].lstrip(".") for line in
                 listing.stdout.splitlines()}
        expected = [f"/usr/bin/{name}" for name in BINARIES] + [
            f"{UNIT_DIR}/{unit}" for unit in UNITS] + [
            f"/etc/petrel/{name}" for name in CONF_FILES] + [
            "/usr/lib/libpetrel.a", "/usr/lib/libpetrel_node_flags.a",
            "/usr/lib/pkgconfig/petrel.pc",
            "/usr/lib/cmake/Petrel/PetrelConfig.cmake",
            "/usr/include/petrel/kv/kv_worker.h",
            "/usr/include/petrel/proto/meta.pb.h",
            "/usr/share/doc/petrel/examples/etc/server.conf",
            "/usr/share/doc/petrel/install.md"]
        for path in expected:
            self.assertIn(path, paths)
        binaries = sorted(path.rsplit("/", 1)[1] for path in paths
                          if path.startswith("/usr/bin/") and
                          not path.endswith("/"))
        self.assertEqual(binaries, sorted(BINARIES + SCRIPTS))
        for path in paths:
            self.assertNotRegex(path, r"_test$|_benchmark$|/tests?/")

    def test_binaries_load_and_print_the_version(self):
        versions = 0
        for name in BINARIES:
            binary = os.path.join(self.root, "usr", "bin", name)
            ldd = procs.check_run(["ldd", binary], timeout_s=30)
            self.assertNotIn("not found", ldd.stdout)
            result = procs.run([binary, "--version"], timeout_s=30)
            self.assertEqual(result.returncode, 0, result.stdout)
            self.assertRegex(result.stdout,
                             rf"{name} {re.escape(ARGS.version)} \(commit ")
            versions += 1
        if versions == 0:
            self.skipTest("binaries load, but none prints its version yet "
                          "(gflags' --version prints the bare name)")

    def test_units_pass_systemd_analyze_verify(self):
        if shutil.which("systemd-analyze") is None:
            self.skipTest("systemd-analyze is not installed")
        # The units name targets (multi-user.target, network-online.target)
        # that verify loads from the same root: this machine's units.
        root = os.path.join(self.tmp, "verify-root")
        shutil.copytree(self.root, root, symlinks=True)
        unit_dir = os.path.join(root, UNIT_DIR.lstrip("/"))
        for host_dir in ["/lib/systemd/system", "/usr/lib/systemd/system"]:
            if not os.path.isdir(host_dir):
                continue
            for name in os.listdir(host_dir):
                target = os.path.join(unit_dir, name)
                if not os.path.lexists(target):
                    source = os.path.join(host_dir, name)
                    if os.path.isfile(source) and not os.path.islink(source):
                        shutil.copy(source, target)
                    elif os.path.islink(source):
                        os.symlink(os.readlink(source), target)
        units = [f"{UNIT_DIR}/petrel-scheduler.service",
                 f"{UNIT_DIR}/petrel-server@0.service",
                 f"{UNIT_DIR}/petrel-worker@0.service"]
        result = procs.run(["systemd-analyze", "verify", f"--root={root}"] +
                           units, timeout_s=60)
        # verify exits 0 on unknown keys or bad values too; it says so.
        self.assertEqual((result.returncode, result.stdout), (0, ""))

    def test_maintainer_scripts_manage_the_petrel_user(self):
        if os.geteuid() != 0 or shutil.which("unshare") is None:
            self.skipTest("needs root and unshare for a private mount "
                          "namespace over a copy of /etc")
        etc = os.path.join(self.tmp, "etc-copy")
        procs.check_run(["cp", "-a", "/etc", etc], timeout_s=60)
        scripts = self.control
        script = f"""
set -e
mount --bind {etc} /etc
mount -t tmpfs tmpfs /var/lib
if getent passwd petrel > /dev/null; then echo HOST_HAS_PETREL; exit 0; fi
sh {scripts}/postinst configure
echo "after-install: $(getent passwd petrel | cut -d: -f1,6,7)"
echo "state-dir: $(stat -c '%U:%G %a' /var/lib/petrel)"
sh {scripts}/postinst configure
echo "users-after-second-configure: $(getent passwd | grep -c '^petrel:')"
sh {scripts}/prerm remove
sh {scripts}/postrm remove
echo "after-remove: $(getent passwd petrel | cut -d: -f1) $(test -d /var/lib/petrel && echo state-kept)"
sh {scripts}/postrm purge
echo "after-purge: user=$(getent passwd petrel | cut -d: -f1) group=$(getent group petrel | cut -d: -f1) state=$(test -d /var/lib/petrel && echo kept || echo gone)"
"""
        result = procs.run(["unshare", "--mount", "--propagation", "private",
                            "sh", "-c", script], timeout_s=120)
        if result.returncode != 0 and "unshare" in result.stdout:
            self.skipTest(f"no private mount namespace here: {result.stdout}")
        self.assertEqual(result.returncode, 0, result.stdout)
        if "HOST_HAS_PETREL" in result.stdout:
            self.skipTest("this machine already has a petrel user")
        out = result.stdout
        self.assertRegex(out, r"after-install: petrel:/var/lib/petrel:"
                              r"/usr/sbin/nologin")
        self.assertIn("state-dir: petrel:petrel 750", out)
        self.assertIn("users-after-second-configure: 1", out)
        self.assertIn("after-remove: petrel state-kept", out)
        self.assertIn("after-purge: user= group= state=gone", out)

    def test_job_runs_as_the_units_say(self):
        etc = os.path.join(self.root, "etc", "petrel")
        edits = {
            # A job of one server and one worker that gives up in a minute.
            "cluster.conf": [(r"--num_servers=\d+", "--num_servers=1"),
                             (r"--num_workers=\d+", "--num_workers=1"),
                             (r"--join_timeout_s=\d+", "--join_timeout_s=60")],
            # Loopback and a free port (read from the scheduler's line).
            "scheduler.conf": [(r"--port=\d+", "--port=0"),
                               (r"--bind=[0-9.]+",
                                "--bind=127.0.0.1 --advertise_host=127.0.0.1")],
            "server.conf": [(r"--bind=[0-9.]+",
                             "--bind=127.0.0.1 --advertise_host=127.0.0.1")],
            "worker.conf": [(r"--job=check",
                             "--job=check --bind=127.0.0.1 "
                             "--advertise_host=127.0.0.1")],
        }
        for name, subs in edits.items():
            self.edit_conf(os.path.join(etc, name), subs)
        # An instance's own file: server 0 also serves /metrics.
        with open(os.path.join(etc, "server-0.conf"), "w") as conf:
            conf.write('PETREL_SERVER_INSTANCE_FLAGS="--metrics_port=0"\n')

        state = os.path.join(self.tmp, "var-lib-petrel")
        os.makedirs(state)
        group = procs.Group()
        try:
            argv, env, env_files = unit_command(self.root,
                                                "petrel-scheduler.service")
            self.assertEqual(env_files, ["/etc/petrel/cluster.conf",
                                         "/etc/petrel/scheduler.conf"])
            scheduler = group.start("petrel-scheduler.service", argv,
                                    env=env, cwd=state)
            port = scheduler.wait_line(r"^PETREL_LISTEN .* port=(\d+)",
                                       60).group(1)
            for name in ["server.conf", "worker.conf"]:
                self.edit_conf(os.path.join(etc, name),
                               [(r"--scheduler=[^ \"]+",
                                 f"--scheduler=127.0.0.1:{port}")])
            argv, env, env_files = unit_command(
                self.root, "petrel-server@.service", instance="0")
            self.assertIn("--rank=0", argv)
            self.assertIn("-/etc/petrel/server-0.conf", env_files)
            server = group.start("petrel-server@0.service", argv, env=env,
                                 cwd=state)
            argv, env, _ = unit_command(self.root, "petrel-worker@.service",
                                        instance="0")
            worker = group.start("petrel-worker@0.service", argv, env=env,
                                 cwd=state)
            # Nodes announce themselves once the whole job has joined.
            ready = server.wait_line(
                r"^PETREL_READY role=server .*rank=0 .*metrics_port=(\d+)", 60)
            self.assertGreater(int(ready.group(1)), 0)
            worker.wait_line(r"check rank=0 .* ok=true", 90)
            for proc in [worker, server, scheduler]:
                self.assertEqual(proc.wait_exit(60), 0,
                                 f"{proc.name}:\n{proc.output()}")
        finally:
            group.kill_all()

    @staticmethod
    def edit_conf(path, subs):
        """Applies each (pattern, replacement) to the file's one setting
        line (comments stay as they are); each must match exactly once."""
        with open(path) as conf:
            lines = conf.read().splitlines()
        settings = [i for i, line in enumerate(lines)
                    if line and not line.startswith("#")]
        if len(settings) != 1:
            raise AssertionError(f"{path}: {len(settings)} setting lines")
        line = lines[settings[0]]
        for pattern, replacement in subs:
            line, count = re.subn(pattern, replacement, line)
            if count != 1:
                raise AssertionError(f"{path}: {pattern!r} matched {count} "
                                     f"times, not once: {line}")
        lines[settings[0]] = line
        with open(path, "w") as conf:
            conf.write("\n".join(lines) + "\n")


def main():
    global ARGS
    parser = argparse.ArgumentParser()
    parser.add_argument("--build-dir", required=True)
    parser.add_argument("--version", required=True)
    parser.add_argument("--cpack", default="cpack")
    ARGS, rest = parser.parse_known_args()
    unittest.main(argv=[sys.argv[0], "-v"] + rest)


if __name__ == "__main__":
    main()

"""cmake --install, then programs built against the installed tree.

Installs the build tree into a temporary prefix (cmake --install --prefix),
checks what went there, compiles every installed header on its own include
path, builds examples/cpp/minimal_worker (as installed under
share/doc/petrel/examples) once with find_package(Petrel) and once with
plain `g++ $(pkg-config --cflags --libs petrel)`, and runs both programs as
the two workers of a job of the installed petrel-scheduler and two
petrel-servers on 127.0.0.1: each pushes its keys twice and checks the sums
it pulls back. A PS-Lite program (tests/pslite/pslite_program.cc, which
includes "ps/ps.h") is built the same two ways against Petrel::pslite and
petrel-pslite.pc and run in every role by tests/integration/dmlc_local.sh.

  install_test.py --build-dir=BUILD --source-dir=SRC --version=X.Y.Z
                  [--cmake=cmake]
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
INSTALLED_BINARIES = sorted([
    "petrel-bench", "petrel-datagen", "petrel-export", "petrel-launch",
    "petrel-predict", "petrel-scheduler", "petrel-server", "petrel-worker",
    "petrelctl", "petrel-keygen"])
# Installed programs that are scripts (no --version, no ELF).
INSTALLED_SCRIPTS = ["petrel-plot"]
LOOPBACK = ["--bind=127.0.0.1", "--advertise_host=127.0.0.1"]


def version_line_regex(program, version):
    """petrel::VersionLine(program) of this build (base/build_info.h)."""
    return (rf"{re.escape(program)} {re.escape(version)} "
            r"\(commit ([0-9a-f]{7,40}|unknown|[0-9A-Za-z._-]+), [A-Za-z]+, "
            r"CUDA (on|off)\)$")


class InstallTest(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="petrel-install-test-")
        cls.prefix = os.path.join(cls.tmp, "prefix")
        procs.check_run([ARGS.cmake, "--install", ARGS.build_dir, "--prefix",
                         cls.prefix], timeout_s=120)
        cls.env = dict(os.environ)
        cls.env["PKG_CONFIG_PATH"] = os.path.join(cls.prefix, "lib",
                                                  "pkgconfig")
        cls.example = os.path.join(cls.prefix, "share", "doc", "petrel",
                                   "examples", "cpp", "minimal_worker")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def test_installs_daemons_tools_library_and_package_files(self):
        bin_dir = os.path.join(self.prefix, "bin")
        # The user programs, and no test or benchmark binary.
        self.assertEqual(sorted(os.listdir(bin_dir)),
                         sorted(INSTALLED_BINARIES + INSTALLED_SCRIPTS))
        for path in ["lib/libpetrel.a", "lib/libpetrel_node_flags.a",
                     "lib/cmake/Petrel/PetrelConfig.cmake",
                     "lib/cmake/Petrel/PetrelConfigVersion.cmake",
                     "lib/cmake/Petrel/PetrelTargets.cmake",
                     "lib/pkgconfig/petrel.pc",
                     "lib/libpetrel_pslite.a",
                     "lib/pkgconfig/petrel-pslite.pc",
                     "include/ps/ps.h", "include/ps/kv_app.h",
                     "include/ps/internal/postoffice.h",
                     "include/petrel/kv/kv_worker.h",
                     "include/petrel/node/node_runtime.h",
                     "include/petrel/node/node_flags.h",
                     "include/petrel/proto/meta.pb.h",
                     "include/petrel/base/build_info.h",
                     "include/petrel/base/build_info_values.h",
                     "lib/systemd/system/petrel-scheduler.service",
                     "lib/systemd/system/petrel-server@.service",
                     "etc/petrel/cluster.conf", "etc/petrel/server.conf",
                     "share/doc/petrel/install.md"]:
            self.assertTrue(os.path.isfile(os.path.join(self.prefix, path)),
                            path)
        # A header that moved keeps its old path, forwarding to the new one.
        with open(os.path.join(self.prefix,
                               "include/petrel/van/node_runtime.h")) as old:
            self.assertIn('#include "node/node_runtime.h"', old.read())
        self.assertTrue(os.path.isfile(os.path.join(
            self.prefix, "include/petrel/cluster/postoffice.h")))
        with open(os.path.join(self.prefix,
                               "include/petrel/van/postoffice.h")) as old:
            self.assertIn('#include "cluster/postoffice.h"', old.read())
        # Units installed into a prefix name that prefix's binaries and
        # configuration, never /usr or /etc.
        with open(os.path.join(self.prefix, "lib/systemd/system/"
                               "petrel-server@.service")) as unit:
            text = unit.read()
        self.assertIn(f"ExecStart={self.prefix}/bin/petrel-server ", text)
        self.assertIn(f"EnvironmentFile={self.prefix}/etc/petrel/cluster.conf",
                      text)
        result = procs.check_run(["pkg-config", "--modversion", "petrel"],
                                 timeout_s=30, env=self.env)
        self.assertEqual(result.stdout.strip(), ARGS.version)

    def test_binaries_print_the_version(self):
        checked = []
        for name in INSTALLED_BINARIES:
            result = procs.run([os.path.join(self.prefix, "bin", name),
                                "--version"], timeout_s=30)
            self.assertEqual(result.returncode, 0, f"{name}: {result.stdout}")
            self.assertRegex(result.stdout,
                             re.compile(version_line_regex(name, ARGS.version),
                                        re.M))
            checked.append(name)
        if not checked:
            self.skipTest("no installed binary prints its version yet "
                          "(gflags' --version prints the bare name)")

    def test_every_installed_header_compiles_alone(self):
        include_root = os.path.join(self.prefix, "include", "petrel")
        headers = []
        for root, _, files in os.walk(include_root):
            headers += [os.path.relpath(os.path.join(root, name), include_root)
                        for name in files if name.endswith(".h")]
        self.assertGreater(len(headers), 30)
        source = os.path.join(self.tmp, "all_headers.cc")
        with open(source, "w") as out:
            for header in sorted(headers):
                out.write(f'#include "{header}"\n')
        cflags = procs.check_run(["pkg-config", "--cflags", "petrel"],
                                 timeout_s=30, env=self.env).stdout.split()
        # Only the installed tree: no -I into the source or build tree.
        procs.check_run([ARGS.cxx, "-fsyntax-only", "-Wall", "-Werror"] +
                        cflags + [source], timeout_s=240)

    def test_workers_built_with_cmake_and_pkg_config_push_and_pull(self):
        # find_package(Petrel), as examples/cpp/minimal_worker says.
        cmake_build = os.path.join(self.tmp, "cmake-build")
        generator = ["-G", "Ninja"] if shutil.which("ninja") else []
        procs.check_run([ARGS.cmake, "-S", self.example, "-B", cmake_build,
                         f"-DCMAKE_PREFIX_PATH={self.prefix}",
                         f"-DCMAKE_CXX_COMPILER={ARGS.cxx}"] + generator,
                        timeout_s=240)
        procs.check_run([ARGS.cmake, "--build", cmake_build], timeout_s=240)
        cmake_worker = os.path.join(cmake_build, "minimal_worker")
        # pkg-config with a plain compiler line.
        flags = procs.check_run(["pkg-config", "--cflags", "--libs", "petrel"],
                                timeout_s=30, env=self.env).stdout.split()
        pc_worker = os.path.join(self.tmp, "minimal_worker_pc")
        procs.check_run([ARGS.cxx, "-o", pc_worker,
                         os.path.join(self.example, "minimal_worker.cc")] +
                        flags, timeout_s=240)

        group = procs.Group()
        try:
            bin_dir = os.path.join(self.prefix, "bin")
            job = ["--num_servers=2", "--num_workers=2",
                   "--join_timeout_s=60"] + LOOPBACK
            scheduler = group.start(
                "petrel-scheduler",
                [os.path.join(bin_dir, "petrel-scheduler"), "--port=0"] + job)
            port = scheduler.wait_line(r"^PETREL_LISTEN .* port=(\d+)",
                                       60).group(1)
            node = [f"--scheduler=127.0.0.1:{port}"] + job
            servers = [group.start(f"petrel-server#{i}",
                                   [os.path.join(bin_dir, "petrel-server")] +
                                   node) for i in range(2)]
            workers = [group.start("minimal_worker (cmake)",
                                   [cmake_worker] + node),
                       group.start("minimal_worker (pkg-config)",
                                   [pc_worker] + node)]
            for worker in workers:
                worker.wait_line(version_line_regex("minimal_worker",
                                                    ARGS.version), 60)
                worker.wait_line(r"pushed twice, pulled 5 values, sums right",
                                 90)
            for proc in workers + servers + [scheduler]:
                self.assertEqual(proc.wait_exit(60), 0,
                                 f"{proc.name}:\n{proc.output()}")
        finally:
            group.kill_all()

    def test_pslite_programs_build_unchanged_and_run_in_every_role(self):
        source = os.path.join(ARGS.source_dir, "tests", "pslite",
                              "pslite_program.cc")
        project = os.path.join(self.tmp, "pslite-project")
        os.makedirs(project)
        with open(os.path.join(project, "CMakeLists.txt"), "w") as out:
            out.write("cmake_minimum_required(VERSION 3.16)\n"
                      "project(pslite_program CXX)\n"
                      "find_package(Petrel REQUIRED)\n"
                      f"add_executable(pslite_program {source})\n"
                      "target_link_libraries(pslite_program PRIVATE "
                      "Petrel::pslite)\n")
        cmake_build = os.path.join(self.tmp, "pslite-cmake-build")
        procs.check_run([ARGS.cmake, "-S", project, "-B", cmake_build,
                         f"-DCMAKE_PREFIX_PATH={self.prefix}",
                         f"-DCMAKE_CXX_COMPILER={ARGS.cxx}"], timeout_s=240)
        procs.check_run([ARGS.cmake, "--build", cmake_build], timeout_s=240)
        flags = procs.check_run(
            ["pkg-config", "--cflags", "--libs", "petrel-pslite"],
            timeout_s=30, env=self.env).stdout.split()
        pc_program = os.path.join(self.tmp, "pslite_program_pc")
        procs.check_run([ARGS.cxx, "-o", pc_program, source] + flags,
                        timeout_s=240)
        local = os.path.join(ARGS.source_dir, "tests", "integration",
                             "dmlc_local.sh")
        env = dict(self.env, DMLC_LOCAL_EXPECT="ok=true",
                   DMLC_NODE_HOST="127.0.0.1")
        for program in [os.path.join(cmake_build, "pslite_program"),
                        pc_program]:
            result = procs.run(["sh", local, "2", "2", program, "kv"],
                               timeout_s=90, env=env)
            self.assertEqual(result.returncode, 0,
                             f"{program}:\n{result.stdout}")


def main():
    global ARGS
    parser = argparse.ArgumentParser()
    parser.add_argument("--build-dir", required=True)
    parser.add_argument("--source-dir", required=True)
    parser.add_argument("--version", required=True)
    parser.add_argument("--cmake", default="cmake")
    parser.add_argument("--cxx", default=shutil.which("g++") or "c++")
    ARGS, rest = parser.parse_known_args()
    unittest.main(argv=[sys.argv[0], "-v"] + rest)


if __name__ == "__main__":
    main()

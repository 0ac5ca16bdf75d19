"""petrel-launch --hosts against a real OpenSSH server: starts sshd (Debian's
openssh-server) on a free port of 127.0.0.2 and 127.0.0.3, with a generated
host key and user key, so that each "host" has its own address. Then:
  1. a training job with processes on both hosts exits 0, each process
     advertising and binding its own host's address (checked with ss), the workers finding
     their data through a variable forwarded from petrel-launch and a glob;
  2. a worker failing with exit code 2 (a bad flag) makes petrel-launch
     exit 2, and the processes on the hosts are stopped;
  3. SIGINT to petrel-launch mid-run stops the job, and no Petrel process
     is left on the hosts;
  4. a host without sshd fails the job at once, naming the host.

Usage: ssh_test.py BIN_DIR SOURCE_DIR. Exit 77 (skipped, with the reason
printed) only where sshd cannot run here."""

import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile

import cluster_util as cu

HOSTS = ["127.0.0.2", "127.0.0.3"]


def start_sshd(d, daemons):
    for key in ("host_key", "user_key"):
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "",
                        "-f", f"{d}/{key}"], check=True)
    shutil.copy(f"{d}/user_key.pub", f"{d}/authorized_keys")
    port = cu.free_port(HOSTS[0])
    listen = "".join(f"ListenAddress {h}\n" for h in HOSTS)
    with open(f"{d}/sshd_config", "w") as f:
        f.write(f"""Port {port}
{listen}HostKey {d}/host_key
AuthorizedKeysFile {d}/authorized_keys
PidFile {d}/sshd.pid
StrictModes no
UsePAM no
PasswordAuthentication no
KbdInteractiveAuthentication no
PermitRootLogin yes
""")
    # sshd refuses to start without its privilege separation directory.
    os.makedirs("/run/sshd", mode=0o755, exist_ok=True)
    sshd = shutil.which("sshd") or "/usr/sbin/sshd"
    daemons.start("sshd", [sshd, "-D", "-e", "-f", f"{d}/sshd_config"],
                  f"{d}/sshd.log")

    def listening():
        daemons.check_running()
        for host in HOSTS:
            try:
                socket.create_connection((host, port), timeout=1).close()
            except OSError:
                return False
        return True
    cu.wait_until(listening, 20, "sshd is not listening")
    return port


def launch_argv(bin_dir, d, port, extra):
    return [os.path.join(bin_dir, "petrel-launch"), f"--hosts={d}/hosts",
            f"--ssh_port={port}",
            f"--ssh_options=-F /dev/null -i {d}/user_key "
            "-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null "
            "-o LogLevel=ERROR",
            f"--config={d}/job.textproto", "--timeout_s=60",
            "--grace_period_s=3"] + extra


def our_petrel_processes(bin_dir, d):
    """Processes of this build's Petrel daemons and workers started for this
    test (their arguments name the test's directory); not petrel-launch."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                argv = f.read().split(b"\0")
        except OSError:
            continue
        program = argv[0].decode(errors="replace")
        if (program.startswith(os.path.join(bin_dir, "petrel-"))
                and not program.endswith("/petrel-launch")
                and any(d.encode() in a for a in argv)):
            found.append((pid, b" ".join(argv).decode(errors="replace")))
    return found


def check_bound_to_own_address(processes):
    """Every process listens on its host's address only (the one in its
    --bind flag), not on every interface."""
    if shutil.which("ss") is None:
        print("ss (iproute2) is not installed: bound addresses not checked")
        return
    listening = subprocess.run(["ss", "-Hltnp"], capture_output=True,
                               text=True).stdout.splitlines()
    for pid, cmdline in processes:
        bind = re.search(r"--bind=(\S+)", cmdline)
        assert bind, cmdline
        mine = [l.split()[3] for l in listening if f"pid={pid}," in l]
        assert mine, (cmdline, listening)
        for address in mine:
            assert address.rsplit(":", 1)[0] == bind.group(1), (cmdline, mine)


def test_trains_on_two_hosts(bin_dir, d, port):
    run = subprocess.run(launch_argv(bin_dir, d, port, []), cwd=d,
                         capture_output=True, text=True, timeout=90)
    out = run.stdout + run.stderr
    print(out)
    assert run.returncode == 0, run.returncode
    assert "final test_logloss=" in out
    assert "train_examples=20000" in out
    # The scheduler on the first host; servers and workers on both, each
    # advertising its own address.
    assert "[scheduler@127.0.0.2] PETREL_LISTEN role=scheduler host=127.0.0.2" in out
    for role, rank, host in [("server", 0, HOSTS[0]), ("server", 1, HOSTS[1]),
                             ("worker", 0, HOSTS[0]), ("worker", 1, HOSTS[1])]:
        assert re.search(rf"^\[{role} {rank}@{host}\] PETREL_READY role={role} "
                         rf"id=\d+ rank={rank} host={host} ", out, re.M), (role, rank)
        assert re.search(rf"\.cc:\d+\] {role} {rank} at {host}:\d+ is node",
                         out), (role, rank)
    # The daemons bound their own host's address, not 0.0.0.0.
    assert re.search(r"\[server 1@127.0.0.3\] .*server bound port \d+, "
                     r"advertised as 127.0.0.3:", out), out


def test_exit_code_2_passes_through(bin_dir, d, port):
    # A config error on the remote workers: they exit 2, and so does
    # petrel-launch.
    run = subprocess.run(
        launch_argv(bin_dir, d, port, ["--device=abacus"]), cwd=d,
        capture_output=True, text=True, timeout=90)
    out = run.stdout + run.stderr
    print(out)
    assert run.returncode == 2, run.returncode
    assert re.search(r"petrel-launch: worker \d@127.0.0.\d exited with code 2 "
                     r"\(bad flags, config or data\)", out), out
    cu.wait_until(lambda: not our_petrel_processes(bin_dir, d), 20,
                  f"Petrel processes left: {our_petrel_processes(bin_dir, d)}")


def test_unreachable_host_fails_naming_it(bin_dir, d, port):
    with open(f"{d}/hosts_unreachable", "w") as f:
        f.write("127.0.0.9\n")  # no sshd there
    argv = launch_argv(bin_dir, d, port, [])
    argv[1] = f"--hosts={d}/hosts_unreachable"
    run = subprocess.run(argv, cwd=d, capture_output=True, text=True,
                         timeout=60)
    out = run.stdout + run.stderr
    print(out)
    assert run.returncode == 1, run.returncode
    assert ("petrel-launch: scheduler@127.0.0.9 exited with code 255 (ssh "
            "failed: host unreachable") in out, out


def test_sigint_leaves_no_process(bin_dir, d, port):
    proc = subprocess.Popen(
        launch_argv(bin_dir, d, port, ["--epochs=100000"]), cwd=d,
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines = []
    try:
        for line in proc.stdout:
            lines.append(line)
            if re.match(r"\[scheduler@127.0.0.2\] progress ", line):
                break
        assert any("progress" in l for l in lines), "".join(lines)
        running = our_petrel_processes(bin_dir, d)
        assert len(running) == 5, running  # 1 + 2 + 2, on the two hosts
        check_bound_to_own_address(running)
        proc.send_signal(signal.SIGINT)
        rest, _ = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    out = "".join(lines) + rest
    print(out)
    assert proc.returncode == 130, proc.returncode
    assert "received SIGINT; asking the scheduler to stop the job" in out
    cu.wait_until(lambda: not our_petrel_processes(bin_dir, d), 20,
                  f"Petrel processes left: {our_petrel_processes(bin_dir, d)}")


def main():
    bin_dir, source_dir = map(os.path.abspath, sys.argv[1:3])
    for tool in ("ssh", "ssh-keygen"):
        if shutil.which(tool) is None:
            cu.skip(f"{tool} is not installed (deploy/install-deps.sh adds "
                    "openssh-client)")
    if shutil.which("sshd") is None and not os.path.exists("/usr/sbin/sshd"):
        cu.skip("sshd is not installed (deploy/install-deps.sh adds "
                "openssh-server)")
    if os.geteuid() != 0:
        cu.skip("sshd needs root to start sessions; this test is not root")
    d = tempfile.mkdtemp(prefix="petrel_ssh_")
    daemons = cu.Daemons()
    try:
        try:
            port = start_sshd(d, daemons)
        except (RuntimeError, TimeoutError, OSError) as e:
            cu.skip(f"sshd could not start here: {e}")
        with open(f"{d}/hosts", "w") as f:
            f.write("# one line per host\n127.0.0.2 slots=2\n127.0.0.3 slots=2\n")
        # data.train names the data through a variable (forwarded to every
        # host like every PETREL_* variable) and a glob.
        os.environ["PETREL_TEST_DATA"] = d
        cu.write_lr_job(bin_dir, d, num_servers=2, num_workers=2,
                        train_entry="${PETREL_TEST_DATA}/tr*n.svm")
        test_trains_on_two_hosts(bin_dir, d, port)
        test_exit_code_2_passes_through(bin_dir, d, port)
        test_sigint_leaves_no_process(bin_dir, d, port)
        test_unreachable_host_fails_naming_it(bin_dir, d, port)
        print("ssh_test: passed")
    finally:
        daemons.stop()
        shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    main()

"""petrel-launch --slurm against a real Slurm: starts munged, slurmctld and
slurmd (Debian's slurm-wlm) on this machine with a generated key and config
(one node, this host), submits deploy/slurm/petrel-train.sbatch with sbatch
for 1 scheduler + 2 servers + 2 workers, and checks that the job trained and
completed with exit code 0; that deploy/slurm/petrel-command.sbatch runs a
worker command whose config error (exit 2) fails the job with exit code 2;
and that a job whose task count does not
match the config fails with exit code 2 before starting anything.

Usage: slurm_test.py BIN_DIR SOURCE_DIR. Exit 77 (skipped, with the reason
printed) only where Slurm cannot run here."""

import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile

import cluster_util as cu

TIMEOUT_S = 60


def slurm_conf(d, node, ctld_port, d_port):
    cpus = os.cpu_count() or 1
    return f"""ClusterName=petreltest
SlurmctldHost={node}(127.0.0.1)
SlurmctldPort={ctld_port}
SlurmdPort={d_port}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={d}/munge/munge.socket
StateSaveLocation={d}/state
SlurmdSpoolDir={d}/spool
SlurmctldPidFile={d}/slurmctld.pid
SlurmdPidFile={d}/slurmd.pid
SlurmctldLogFile={d}/log/slurmctld.log
SlurmdLogFile={d}/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
MpiDefault=none
ReturnToService=2
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
MailProg=/bin/true
NodeName={node} NodeAddr=127.0.0.1 CPUs={cpus} State=UNKNOWN
PartitionName=petrel Nodes={node} Default=YES MaxTime=10 State=UP
"""


def start_slurm(d, daemons, env):
    for sub in ("munge", "state", "spool", "log"):
        os.makedirs(os.path.join(d, sub), mode=0o700)
    with open(os.path.join(d, "munge", "munge.key"), "wb") as f:
        f.write(os.urandom(1024))
    os.chmod(os.path.join(d, "munge", "munge.key"), 0o600)
    munged = daemons.start(
        "munged",
        ["munged", "-F", "-f", f"--socket={d}/munge/munge.socket",
         f"--key-file={d}/munge/munge.key", f"--log-file={d}/log/munged.log",
         f"--pid-file={d}/munge/munged.pid", f"--seed-file={d}/munge/seed"],
        f"{d}/log/munged.out")
    cu.wait_until(lambda: os.path.exists(f"{d}/munge/munge.socket")
                  or munged.poll() is not None, 20, "munged socket")
    daemons.check_running()
    conf = env["SLURM_CONF"]
    daemons.start("slurmctld", ["slurmctld", "-D", "-i", "-f", conf],
                  f"{d}/log/slurmctld.out", env)
    daemons.start("slurmd", ["slurmd", "-D", "-f", conf],
                  f"{d}/log/slurmd.out", env)

    def node_idle():
        daemons.check_running()
        out = subprocess.run(["sinfo", "-h", "-o", "%T"], env=env,
                             capture_output=True, text=True).stdout
        return out.strip() == "idle"
    cu.wait_until(node_idle, 30, "the Slurm node is not idle")


def job_state(job_id, env):
    out = subprocess.run(["scontrol", "-o", "show", "job", job_id], env=env,
                         capture_output=True, text=True).stdout
    state = re.search(r"JobState=(\S+)", out)
    code = re.search(r"ExitCode=(\S+)", out)
    return (state.group(1) if state else "", code.group(1) if code else "")


def run_job(d, env, script, ntasks, args):
    submit = subprocess.run(
        ["sbatch", "--parsable", f"--ntasks={ntasks}", "--overcommit",
         f"--chdir={d}", f"--output={d}/out-%j.txt", script] + args,
        env=env, capture_output=True, text=True, timeout=30)
    assert submit.returncode == 0, submit.stderr
    job_id = submit.stdout.strip().split(";")[0]
    done = ("COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL",
            "OUT_OF_MEMORY", "BOOT_FAIL", "DEADLINE", "PREEMPTED")
    state = cu.wait_until(
        lambda: job_state(job_id, env) if job_state(job_id, env)[0] in done
        else None, TIMEOUT_S, f"job {job_id} did not finish")
    with open(f"{d}/out-{job_id}.txt", errors="replace") as f:
        return state, f.read()


def main():
    bin_dir, source_dir = map(os.path.abspath, sys.argv[1:3])
    for tool in ("munged", "slurmctld", "slurmd", "sbatch", "scontrol",
                 "sinfo", "srun"):
        if shutil.which(tool) is None and not os.path.exists(f"/usr/sbin/{tool}"):
            cu.skip(f"{tool} is not installed (deploy/install-deps.sh adds "
                    "slurm-wlm and munge)")
    if os.geteuid() != 0:
        cu.skip("slurmd must run as root to start jobs; this test is not root")
    node = socket.gethostname().split(".")[0]
    try:
        socket.gethostbyname(node)
    except OSError:
        cu.skip(f"this host's name {node} does not resolve; Slurm's node "
                "name must")
    os.environ["PATH"] += ":/usr/sbin"
    d = tempfile.mkdtemp(prefix="petrel_slurm_")
    env = dict(os.environ, SLURM_CONF=f"{d}/slurm.conf",
               PETREL_BIN=bin_dir)
    with open(env["SLURM_CONF"], "w") as f:
        f.write(slurm_conf(d, node, cu.free_port(), cu.free_port()))
    daemons = cu.Daemons()
    try:
        try:
            start_slurm(d, daemons, env)
        except (RuntimeError, TimeoutError) as e:
            cu.skip(f"Slurm could not start here: {e}")
        config = cu.write_lr_job(bin_dir, d, num_servers=2, num_workers=2)
        script = os.path.join(source_dir, "deploy/slurm/petrel-train.sbatch")

        (state, code), out = run_job(d, env, script, 5, [config])
        print(out)
        assert (state, code) == ("COMPLETED", "0:0"), (state, code)
        for task, role in enumerate(["scheduler", "server 0", "server 1",
                                     "worker 0", "worker 1"]):
            assert f"Slurm task {task} of 5 runs the {role}\n" in out, role
        assert re.search(r"^[34]: .*final test_logloss=", out, re.M), out
        assert "train_examples=20000" in out, out
        assert "job finished" in out, out

        # Your own worker command (deploy/slurm/petrel-command.sbatch), here
        # petrel-worker with a config error: its exit 2 stops the step, and
        # the job's exit code is 2, or 143 when srun's SIGTERM found another
        # task still starting (docs/clusters.md, "Exit status"); srun names
        # the task that exited 2 either way.
        command_script = os.path.join(source_dir,
                                      "deploy/slurm/petrel-command.sbatch")
        (state, code), out = run_job(
            d, dict(env, NUM_SERVERS="2"), command_script, 5,
            [f"{bin_dir}/petrel-worker", "--job=train", f"--config={config}",
             "--device=abacus"])
        print(out)
        assert state == "FAILED", (state, code)
        # srun lists tasks as "task 3" or "tasks 3-4".
        if code != "2:0":
            assert code == "143:0", (state, code)
            assert re.search(r"tasks? [\d,-]+: Terminated", out), out
        assert re.search(r"tasks? [\d,-]*[34][\d,-]*: Exited with exit code 2",
                         out), out
        assert re.search(r"^[34]: petrel-worker: train.device: device "
                         r"\"abacus\"", out, re.M), out

        # 1 + 2 + 2 processes cannot run in 4 tasks: refused before srun,
        # with the launcher's exit code 2.
        (state, code), out = run_job(d, env, script, 4, [config])
        print(out)
        assert (state, code) == ("FAILED", "2:0"), (state, code)
        assert "the step has 4 tasks but the job needs" in out, out
        print("slurm_test: passed")
    finally:
        daemons.stop()
        shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    main()

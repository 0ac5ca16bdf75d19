"""The image's checks (kubernetes_test.py image, image_build): the
Dockerfile's stages, the runtime stage's packages against the libraries the
programs link, and a build with buildah."""

import os
import shutil
import subprocess

import k8s_manifests as km
from k8s_manifests import by_kind, fail, skip


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
    for job in by_kind(objects, "Job"):
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
    jobs = os.environ.get("PETREL_JOBS", str(os.cpu_count() or 2))
    cmd = [buildah, "bud", "--layers", "--isolation=chroot",
           "--build-arg", f"DEBIAN_IMAGE={base}",
           "--build-arg", f"JOBS={jobs}", "-t", tag, args.source_dir]
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

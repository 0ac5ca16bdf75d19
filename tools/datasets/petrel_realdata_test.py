"""Tests of petrel-realdata: each data set whose Debian package is
installed is converted and its files are checked (libsvm syntax, 0/1
labels, increasing indices, finite non-zero values, the documented split
sizes, the same bytes on a second run); a missing package is exit status 3
naming it. Data sets whose package is not installed are skipped, named on
stdout; with none installed the test exits 77 (ctest: skipped).

  python3 petrel_realdata_test.py
"""
import hashlib
import math
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
TOOL = os.path.join(HERE, "petrel-realdata")

# examples per split, as the converter's docstring describes them.
SIZES = {"spam": {"train": 3245, "valid": 441, "test": 915},
         "churn": {"train": 4931, "valid": 718, "test": 1394},
         "fashion-mnist": {"train": 54072, "valid": 5928, "test": 10000}}
# Churn: 9 numeric columns, 10 factors with 31 levels in all.
FEATURES = {"spam": 57, "churn": 40, "fashion-mnist": 784}
SMALL = ("spam", "churn")


def run(argv, env=None):
    return subprocess.run([sys.executable, TOOL] + argv, capture_output=True,
                          text=True, timeout=600, env=env)


def installed():
    out = run(["--list"])
    assert out.returncode == 0, out.stderr
    have = {}
    for line in out.stdout.split("\n"):
        if line:
            fields = dict(f.split("=", 1) for f in line.split()[1:])
            have[line.split()[0]] = fields["installed"] == "1"
    return have


def check_file(test, path, max_index, parse_lines=None):
    """Checks the first parse_lines lines (all by default) and counts all;
    returns (lines, positives, sha256)."""
    lines = positives = 0
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for raw in f:
            digest.update(raw)
            lines += 1
            positives += raw.startswith(b"1 ")
            if parse_lines is not None and lines > parse_lines:
                continue
            tokens = raw.decode().split()
            test.assertIn(tokens[0], ("0", "1"), (path, lines))
            last = 0
            for tok in tokens[1:]:
                index, value = tok.split(":")
                test.assertGreater(int(index), last, (path, lines, tok))
                test.assertLessEqual(int(index), max_index, (path, lines))
                last = int(index)
                v = float(value)
                test.assertTrue(math.isfinite(v) and v != 0, (path, lines))
    return lines, positives, digest.hexdigest()


class RealDataTest(unittest.TestCase):
    def convert_and_check(self, name):
        with tempfile.TemporaryDirectory(prefix="petrel_realdata_") as d:
            out = run([name, "--out_dir=" + d])
            self.assertEqual(out.returncode, 0, out.stderr)
            digests = {}
            for split, count in SIZES[name].items():
                path = os.path.join(d, split + ".svm")
                self.assertIn("split=%s file=%s examples=%d" %
                              (split, path, count), out.stdout)
                # Fashion-MNIST's training file is large: its first lines.
                parse = 2000 if split == "train" and name not in SMALL else None
                lines, positives, digests[split] = check_file(
                    self, path, FEATURES[name], parse)
                self.assertEqual(lines, count)
                self.assertTrue(0 < positives < lines)
            if name in SMALL:  # convert again, same bytes
                again = run([name, "--out_dir=" + d])
                self.assertEqual(again.returncode, 0, again.stderr)
                for split in SIZES[name]:
                    _, _, digest = check_file(
                        self, os.path.join(d, split + ".svm"), FEATURES[name])
                    self.assertEqual(digest, digests[split], split)

    def test_spam(self):
        if not HAVE.get("spam"):
            self.skipTest("r-cran-kernlab is not installed")
        self.convert_and_check("spam")

    def test_churn(self):
        if not HAVE.get("churn"):
            self.skipTest("r-cran-modeldata is not installed")
        self.convert_and_check("churn")

    def test_fashion_mnist(self):
        if not HAVE.get("fashion-mnist"):
            self.skipTest("dataset-fashion-mnist is not installed")
        self.convert_and_check("fashion-mnist")

    def test_missing_package_names_it(self):
        with tempfile.TemporaryDirectory(prefix="petrel_realdata_") as d:
            env = dict(os.environ, PETREL_REALDATA_ROOT=d)
            for name, package in (("spam", "r-cran-kernlab"),
                                  ("churn", "r-cran-modeldata"),
                                  ("fashion-mnist", "dataset-fashion-mnist")):
                out = run([name, "--out_dir=" + d + "/out"], env=env)
                self.assertEqual(out.returncode, 3, out.stderr)
                self.assertIn("apt-get install " + package, out.stderr)


if __name__ == "__main__":
    HAVE = installed()
    for name, ok in sorted(HAVE.items()):
        if not ok:
            print("petrel_realdata_test: %s: package not installed, skipped" %
                  name)
    if not any(HAVE.values()):
        print("petrel_realdata_test: no data set's package is installed")
        sys.exit(77)
    unittest.main()

"""Tests of petrel-plot: it draws the CSV of a real run (petrel-datagen data,
a job run by petrel-launch with validation and a progress CSV) and the PNG
is checked (header, size, pixels that are not blank); bad CSVs get a clear
error and exit status 2.

  python3 petrel_plot_test.py BIN_DIR     (ctest passes the build's bin/)
"""
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
PLOT = os.path.join(HERE, "petrel-plot")
BIN_DIR = None

JOB = """
num_servers: 1
num_workers: 2
model { kind: KIND_LR }
data { format: FORMAT_LIBSVM validation_fraction: 0.1 }
train { batch_size: 256 epochs: 3 eval_every_batches: 8
        progress_interval_s: 0.05 }
"""


def run(argv, **kw):
    return subprocess.run(argv, capture_output=True, text=True, timeout=120,
                          **kw)


class PetrelPlotTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory(prefix="petrel_plot_test_")
        d = cls.tmp.name
        gen = run([os.path.join(BIN_DIR, "petrel-datagen"),
                   f"--train_out={d}/train.svm", "--train_examples=20000",
                   f"--test_out={d}/test.svm", "--test_examples=2000",
                   "--seed=4"])
        assert gen.returncode == 0, gen.stdout + gen.stderr
        with open(f"{d}/job.textproto", "w") as f:
            f.write(JOB)
        cls.csv = f"{d}/progress.csv"
        job = run([os.path.join(BIN_DIR, "petrel-launch"),
                   f"--config={d}/job.textproto", f"--train={d}/train.svm",
                   f"--test={d}/test.svm", f"--progress_csv={cls.csv}",
                   "--timeout_s=90"])
        assert job.returncode == 0, job.stdout + job.stderr

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_draws_the_curves_of_a_real_run(self):
        import matplotlib.image
        png = os.path.join(self.tmp.name, "curves.png")
        p = run([sys.executable, PLOT, self.csv, "-o", png, "--title", "t"])
        self.assertEqual(p.returncode, 0, p.stderr)
        with open(png, "rb") as f:
            self.assertEqual(f.read(8), b"\x89PNG\r\n\x1a\n")
        self.assertGreater(os.path.getsize(png), 10000)
        image = matplotlib.image.imread(png)
        height, width = image.shape[:2]
        self.assertEqual((width, height), (1200, 336))  # 15 x 4.2 in at 80 dpi
        rgb = image[:, :, :3]
        # Curves and text: many pixels are neither white nor grey.
        coloured = ((rgb.max(axis=2) - rgb.min(axis=2)) > 0.2).sum()
        dark = (rgb.max(axis=2) < 0.5).sum()
        self.assertGreater(coloured, 500)
        self.assertGreater(dark, 500)

    def test_the_csv_has_train_and_eval_rows(self):
        with open(self.csv) as f:
            lines = f.read().splitlines()
        header = lines[0].split(",")
        kinds = {line.split(",")[0] for line in lines[1:]}
        self.assertEqual(kinds, {"train", "eval"})
        for line in lines[1:]:
            self.assertEqual(len(line.split(",")), len(header), line)
        datasets = {line.split(",")[header.index("dataset")]
                    for line in lines[1:] if line.startswith("eval,")}
        self.assertEqual(datasets, {"validation", "test"})

    def check_error(self, text, message):
        path = os.path.join(self.tmp.name, "bad.csv")
        if text is None:
            path = os.path.join(self.tmp.name, "missing.csv")
        else:
            with open(path, "w") as f:
                f.write(text)
        out = os.path.join(self.tmp.name, "bad.png")
        p = run([sys.executable, PLOT, path, "-o", out])
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertIn(message, p.stderr)
        self.assertTrue(p.stderr.startswith("petrel-plot: "), p.stderr)
        self.assertFalse(os.path.exists(out))

    def test_missing_csv(self):
        self.check_error(None, "No such file")

    def test_empty_csv(self):
        self.check_error("", "is empty")

    def test_not_a_progress_csv(self):
        self.check_error("a,b\n1,2\n", "not a Petrel progress CSV")

    def test_malformed_rows(self):
        with open(self.csv) as f:
            header = f.readline()
        self.check_error(header + "train,1,2\n", ":2: 3 cells")
        cells = ["train", "x"] + [""] * (len(header.split(",")) - 2)
        self.check_error(header + ",".join(cells) + "\n",
                         ":2: elapsed_s 'x' is not a number")
        self.check_error(header, "no progress rows")

    def test_help(self):
        p = run([sys.executable, PLOT, "--help"])
        self.assertEqual(p.returncode, 0)
        self.assertIn("learning curves", p.stdout)
        p = run([sys.executable, PLOT])
        self.assertEqual(p.returncode, 2)


if __name__ == "__main__":
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        print("SKIPPED: python3-matplotlib is not installed "
              "(deploy/install-deps.sh)")
        sys.exit(77)
    BIN_DIR = sys.argv.pop(1)
    unittest.main()
